// allgatherv by Bruck's algorithm (MPICH's small allgather for group sizes that are not powers of
// two): ceil(log2 p) steps on any p, against recursive doubling's floor(log2 p) + 2 and its
// second pass of the whole output to the extra ranks. After the step with distance d each rank
// r holds blocks r, r + 1, .., r + 2d - 1 (mod p): it sends rank r - d the first d (or, in the
// last step, the p - d still missing there) of the blocks it holds and receives as many from rank
// r + d. Bruck's original gathers into a buffer in rotated order and rotates it at the end; here
// every block lands at its place in `out` at once: a run of consecutive blocks mod p is at most
// two byte ranges of `out` (before and after the wrap past rank p - 1), and sender and receiver
// cut the same blocks at the same wrap, so both transfers of a step meet their counterparts in
// order on the one stream between the two ranks. No copies but the own block, no scratch.
// Blocks may differ in size or be empty.
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "base/copy_bytes.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"

namespace kolo::comm {

void allgatherv_bruck(Communicator& comm, ConstBytes mine, Bytes out,
                      std::span<const size_t> bytes_per_rank) {
  const std::vector<size_t> offset =
      detail::checked_blocks(comm, "allgatherv_bruck", mine, out, bytes_per_rank);
  const int n = comm.size();
  const int rank = comm.rank();
  if (!mine.empty()) move_bytes(out.data() + offset[rank], mine.data(), mine.size());
  if (n == 1) return;

  auto blocks = [&](int low, int high) {  // blocks [low, high) of `out`, 0 <= low <= high <= n
    return out.subspan(offset[low], offset[high] - offset[low]);
  };
  // Blocks first, first + 1, .., first + count - 1 (mod n): the part before the wrap, the rest.
  auto run_of = [&](int first, int count) -> std::array<Bytes, 2> {
    first %= n;
    const int end = first + count;
    if (end <= n) return {blocks(first, end), Bytes{}};
    return {blocks(first, n), blocks(0, end - n)};
  };
  for (int distance = 1; distance < n; distance *= 2) {
    const int count = std::min(distance, n - distance);
    const int to = (rank - distance + n) % n;  // lacks the blocks this rank holds first
    const int from = (rank + distance) % n;
    const std::array<Bytes, 2> give = run_of(rank, count);
    const std::array<Bytes, 2> take = run_of(rank + distance, count);
    const std::array<SendOp, 2> sends{{{to, give[0]}, {to, give[1]}}};
    const std::array<RecvOp, 2> recvs{{{from, take[0]}, {from, take[1]}}};
    comm.exchange(sends, recvs);
  }
}

}  // namespace kolo::comm
