// Allgatherv for the ranks of one host through the host's shared-memory arena: in step k every
// rank copies the k-th slot-sized piece of its block into its own slot half k % 2, and after one
// barrier (detail::finish_step_writes) copies everyone else's piece straight from their slots into
// `out`. Two copies per byte as the ring over shared-memory links, but one barrier per step
// instead of a handshake per ring round and peer: small messages cost one flag exchange.
// Blocks may differ in size or be empty; every rank runs the steps of the largest block.
// From detail::single_copy_blocks_from on (the largest block; kSingleCopyMinBytes where reading a
// peer's memory costs less than the two copies) each rank instead reads its peers' blocks
// straight from their memory in one step (comm/single_copy.h), where the job may: each as soon as
// that peer has published, and its own block into `out` while a peer is still behind.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "base/copy_bytes.h"
#include "base/errors.h"
#include "comm/arena_wait.h"
#include "comm/collective_arena.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/single_copy.h"

namespace kolo::comm {

void allgatherv_shared_memory(Communicator& comm, ConstBytes mine, Bytes out,
                              std::span<const size_t> bytes_per_rank) {
  const std::vector<size_t> offset =
      detail::checked_blocks(comm, "allgatherv_shared_memory", mine, out, bytes_per_rank);
  CollectiveArena& collective = detail::required_arena(comm, "allgatherv_shared_memory");
  const int n = comm.size();
  const int self = collective.host.slot;
  bool own_copied = mine.empty() || mine.data() == out.data() + offset[self];
  auto copy_own = [&] {
    if (!own_copied) move_bytes(out.data() + offset[self], mine.data(), mine.size());
    own_copied = true;
  };
  if (n == 1) return copy_own();
  transport::SharedArena& arena = *collective.host.arena;
  const size_t chunk = arena.chunk_bytes();
  const size_t largest = *std::max_element(bytes_per_rank.begin(), bytes_per_rank.end());
  // The probe (collective) at the first allgather past kSingleCopyMinBytes, as every rank
  // knows every block's size.
  if (largest >= detail::kSingleCopyMinBytes &&
      largest >= detail::single_copy_blocks_from(comm, collective)) {
    const uint64_t step = collective.steps++;
    const int half = static_cast<int>(step % 2);
    detail::before_writing(comm, collective, step);
    detail::publish_block(collective, half, 0, mine.data(), mine.size());
    // From the next rank on (the readers of one rank's memory are spread over the ranks: each
    // read walks and pins the owner's pages, under locks of its address space), each as soon as
    // it has published; this rank's own block is copied while a peer is still behind, or after
    // it has said it read the others'.
    auto read_from = [&](int r) {
      const size_t bytes = bytes_per_rank[static_cast<size_t>(r)];
      if (bytes > 0) {
        detail::read_block(comm, collective, r, half, 0, out.data() + offset[r], bytes);
      }
    };
    detail::take_as_posted(comm, collective, step, std::ref(copy_own), std::ref(read_from));
    detail::finish_step_reads(comm, collective, step, std::ref(copy_own));
    return;
  }
  copy_own();
  for (size_t done = 0; done < largest; done += chunk) {
    const uint64_t step = collective.steps++;
    const int half = static_cast<int>(step % 2);
    auto piece = [&](int r) {  // the bytes of rank r's block this step moves
      const size_t block = bytes_per_rank[static_cast<size_t>(r)];
      return done < block ? std::min(chunk, block - done) : 0;
    };
    detail::before_writing(comm, collective, step);
    if (const size_t bytes = piece(self); bytes > 0) {
      copy_bytes(arena.slot(self, half), mine.data() + done, bytes);
    }
    detail::finish_step_writes(comm, collective, step);
    for (int r = 0; r < n; ++r) {
      if (const size_t bytes = piece(r); r != self && bytes > 0) {
        copy_bytes(out.data() + offset[static_cast<size_t>(r)] + done, arena.slot(r, half), bytes);
      }
    }
  }
}

}  // namespace kolo::comm
