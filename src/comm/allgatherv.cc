// allgatherv: the host's shared-memory arena when the group is exactly one host's ranks (see
// detail::arena_serves), else, for small totals, recursive doubling on powers of two from 4 ranks
// (allgatherv_doubling.cc) and Bruck's algorithm on other sizes from 5 (allgatherv_bruck.cc;
// allgather_choice.h says where), else the ring. Ring: every rank copies its own
// block into place, then in round s forwards block r-s to its right neighbour while receiving
// block r-s-1 from its left one, straight into `out`. Blocks may differ in size or be empty.
#include <cstring>
#include <numeric>
#include <vector>

#include "base/copy_bytes.h"
#include "comm/allgather_choice.h"
#include "comm/arena_wait.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"

namespace kolo::comm {

void allgatherv(Communicator& comm, ConstBytes mine, Bytes out,
                std::span<const size_t> bytes_per_rank) {
  const size_t total = std::accumulate(bytes_per_rank.begin(), bytes_per_rank.end(), size_t{0});
  if (detail::arena_serves(comm, total, detail::kOversubscribedArenaBytes)) {
    return allgatherv_shared_memory(comm, mine, out, bytes_per_rank);
  }
  // Same on every rank: every rank knows every block's size.
  if (allgather_doubling_serves(comm.size(), total)) {
    return allgatherv_doubling(comm, mine, out, bytes_per_rank);
  }
  if (allgather_bruck_serves(comm.size(), total)) {
    return allgatherv_bruck(comm, mine, out, bytes_per_rank);
  }
  allgatherv_ring(comm, mine, out, bytes_per_rank);
}

void allgatherv_ring(Communicator& comm, ConstBytes mine, Bytes out,
                     std::span<const size_t> bytes_per_rank) {
  const std::vector<size_t> offset =
      detail::checked_blocks(comm, "allgatherv", mine, out, bytes_per_rank);
  const int n = comm.size();
  const int rank = comm.rank();
  auto block = [&](int r) {
    r = ((r % n) + n) % n;
    return out.subspan(offset[r], bytes_per_rank[r]);
  };
  if (!mine.empty()) move_bytes(block(rank).data(), mine.data(), mine.size());
  if (n == 1) return;

  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  for (int step = 0; step < n - 1; ++step) {
    comm.send_recv(right, block(rank - step), left, block(rank - step - 1));
  }
}

}  // namespace kolo::comm
