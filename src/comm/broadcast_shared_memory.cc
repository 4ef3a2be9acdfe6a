// Broadcast for the ranks of one host through the host's shared-memory arena: in step k the root
// copies the k-th piece of its buffer into its slot half k % 2 and posts `ready`; every other rank
// posts its own `ready` at once (it writes nothing), waits for the root's alone and copies the
// piece out. No barrier: the root may run a step ahead of the slowest receiver (it waits only
// until every receiver entered the step before, detail::before_writing), so back to back
// broadcasts overlap as they do in the links' buffers. Each byte is copied twice whatever the
// group size, where the tree over links copies it twice per level. Between kSingleCopyMinBytes
// and kSingleCopyMaxBytes the receivers read the root's buffer straight from its memory instead,
// in one step (comm/single_copy.h), where the job may.
#include <algorithm>
#include <cstring>

#include "comm/arena_wait.h"
#include "comm/collective_arena.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/single_copy.h"

namespace kolo::comm {

namespace {
// A piece is at most this, not the whole slot half: the root copies piece k + 1 while the
// receivers copy piece k out, so the smaller the piece the less the two copies run one after the
// other (a 2 MiB broadcast in two 1 MiB pieces is three piece-times, in sixteen of 128 KiB
// seventeen eighths). And a receiver then waits only one piece's copy (~3 us), well inside the
// spin before it sleeps (spin_before_poll, 20 us): with 1 MiB pieces the wait was about as long
// as the spin, and runs fell into a mode where every step paid a futex wake-up (np 2 pinned,
// kolo-bench: 2 MiB in 46 us or 251 us from run to run; 67 us every run with 128 KiB pieces,
// 64 KiB no better: more steps, each with its flag round trip).
constexpr size_t kPieceBytes = size_t{128} * 1024;
// Above this the pipelined two copies win: the root's copy of a piece overlaps the receivers'
// copy of the one before, and reading another process's pages costs more per byte as they grow
// (np 2, 4 MiB: 319 us pipelined, ~400 in one read).
constexpr size_t kSingleCopyMaxBytes = size_t{1} << 20;

// One step: the root publishes its buffer; every receiver reads it and says so.
void single_copy_step(Communicator& comm, CollectiveArena& collective, Bytes data, int root) {
  transport::SharedArena& arena = *collective.host.arena;
  const int self = collective.host.slot;
  const uint64_t step = collective.steps++;
  const int half = static_cast<int>(step % 2);
  if (self == root) {
    detail::before_writing(comm, collective, step);
    detail::publish_block(collective, half, 0, data.data(), data.size());
    arena.post(self, transport::SharedArena::Flag::ready, step + 1);
    detail::wait_for_members(comm, collective, transport::SharedArena::Flag::reduced, step + 1);
    return;
  }
  arena.post(self, transport::SharedArena::Flag::ready, step + 1);
  detail::wait_for_members(comm, collective, transport::SharedArena::Flag::ready, step + 1, root);
  detail::read_block(comm, collective, root, half, 0, data.data(), data.size());
  arena.post(self, transport::SharedArena::Flag::reduced, step + 1);
}
}  // namespace

void broadcast_single_copy(Communicator& comm, Bytes data, int root) {
  detail::check_root(comm, "broadcast_single_copy", root);
  CollectiveArena& collective = detail::required_arena(comm, "broadcast_single_copy");
  if (comm.size() == 1) return;
  single_copy_step(comm, collective, data, root);
}

void broadcast_shared_memory(Communicator& comm, Bytes data, int root) {
  detail::check_root(comm, "broadcast_shared_memory", root);
  CollectiveArena& collective = detail::required_arena(comm, "broadcast_shared_memory");
  if (comm.size() == 1) return;
  transport::SharedArena& arena = *collective.host.arena;
  const int self = collective.host.slot;
  if (data.size() >= detail::kSingleCopyMinBytes && data.size() <= kSingleCopyMaxBytes &&
      detail::single_copy_usable(comm, collective)) {
    return single_copy_step(comm, collective, data, root);
  }
  const size_t piece = std::min(arena.chunk_bytes(), kPieceBytes);
  for (size_t done = 0; done < data.size(); done += piece) {
    const size_t bytes = std::min(piece, data.size() - done);
    const uint64_t step = collective.steps++;
    const int half = static_cast<int>(step % 2);
    if (self == root) {
      detail::before_writing(comm, collective, step);
      std::memcpy(arena.slot(root, half), data.data() + done, bytes);
      arena.post(self, transport::SharedArena::Flag::ready, step + 1);
    } else {
      arena.post(self, transport::SharedArena::Flag::ready, step + 1);
      detail::wait_for_members(comm, collective, transport::SharedArena::Flag::ready, step + 1,
                               root);
      std::memcpy(data.data() + done, arena.slot(root, half), bytes);
    }
  }
}

}  // namespace kolo::comm
