// Broadcast for the ranks of one host through the host's shared-memory arena: in step k the root
// copies the k-th piece of its buffer into its slot half k % 2 and posts `ready`; every other rank
// posts its own `ready` at once (it writes nothing), waits for the root's alone and copies the
// piece out. No barrier: the root may run a step ahead of the slowest receiver (it waits only
// until every receiver entered the step before, detail::before_writing), so back to back
// broadcasts overlap as they do in the links' buffers. Each byte is copied twice whatever the
// group size, where the tree over links copies it twice per level. From kSingleCopyMinBytes, with a
// CPU per rank, the root and the receivers copy one part each straight between their buffers in
// one step (split_copy_step, comm/single_copy.h), where the job may; with more ranks than CPUs, up
// to kSingleCopyMaxBytes, the receivers read the root's whole buffer (single_copy_step).
#include <algorithm>
#include <cstring>
#include <functional>

#include "base/copy_bytes.h"
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
// Above this the pipelined two copies win over the receivers reading everything (the root's copy
// of a piece overlaps the receivers' copy of the one before; np 2, 4 MiB: 319 us pipelined, ~400
// in one read); the split copy, where the root writes part of it, beats both (np 2, kolo-bench
// medians against the pipelined copies, a loaded machine: 4 MiB 491 us against 812, 16 MiB 1878
// against 3149).
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
// One step with both sides copying: every receiver publishes its buffer too, and while it reads
// the head of the root's buffer the root writes the tail, 1/n of it, into each receiver's. With
// a CPU per rank the root otherwise idles while each receiver copies everything (np 2: each side
// now copies half; kolo-bench medians, a loaded machine: 256 KiB 6.8 us against 11.3, 1 MiB 22
// against 57-168). The receiver leaves once the root said it wrote (`reduced`), the root once
// every receiver said it read.
void split_copy_step(Communicator& comm, CollectiveArena& collective, Bytes data, int root) {
  transport::SharedArena& arena = *collective.host.arena;
  const int self = collective.host.slot;
  const uint64_t step = collective.steps++;
  const int half = static_cast<int>(step % 2);
  const size_t tail = data.size() / static_cast<size_t>(comm.size()) / 64 * 64;
  const size_t head = data.size() - tail;
  detail::before_writing(comm, collective, step);
  detail::publish_block(collective, half, 0, data.data(), data.size());
  if (self == root) {
    auto write_tail = [&](int receiver) {
      detail::write_block_range(comm, collective, receiver, half, 0, head, data.data() + head,
                                tail);
    };
    detail::take_as_posted(comm, collective, step, {}, std::ref(write_tail));
    detail::finish_step_reads(comm, collective, step);
    return;
  }
  arena.post(self, transport::SharedArena::Flag::ready, step + 1);
  detail::wait_for_members(comm, collective, transport::SharedArena::Flag::ready, step + 1, root);
  detail::read_block_range(comm, collective, root, half, 0, 0, data.data(), head);
  arena.post(self, transport::SharedArena::Flag::reduced, step + 1);
  detail::wait_for_members(comm, collective, transport::SharedArena::Flag::reduced, step + 1, root);
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
  if (data.size() >= detail::kSingleCopyMinBytes && !comm.oversubscribed() &&
      detail::single_copy_usable(comm, collective)) {
    return split_copy_step(comm, collective, data, root);
  }
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
      copy_bytes(arena.slot(root, half), data.data() + done, bytes);
      arena.post(self, transport::SharedArena::Flag::ready, step + 1);
    } else {
      arena.post(self, transport::SharedArena::Flag::ready, step + 1);
      detail::wait_for_members(comm, collective, transport::SharedArena::Flag::ready, step + 1,
                               root);
      copy_bytes(data.data() + done, arena.slot(root, half), bytes);
    }
  }
}

}  // namespace kolo::comm
