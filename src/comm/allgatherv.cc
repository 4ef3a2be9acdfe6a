// Ring allgatherv: every rank copies its own block into place, then in round s forwards block
// r-s to its right neighbour while receiving block r-s-1 from its left one, straight into `out`.
// Blocks may differ in size or be empty.
#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "base/errors.h"
#include "comm/collectives.h"

namespace kolo::comm {

void allgatherv(Communicator& comm, ConstBytes mine, Bytes out,
                std::span<const size_t> bytes_per_rank) {
  const int n = comm.size();
  const int rank = comm.rank();
  if (bytes_per_rank.size() != static_cast<size_t>(n)) {
    throw InvalidArgument(fmt::format("rank {}: allgatherv got {} block sizes for a group of {}",
                                      rank, bytes_per_rank.size(), n));
  }
  std::vector<size_t> offset(static_cast<size_t>(n) + 1, 0);
  for (int r = 0; r < n; ++r) offset[r + 1] = offset[r] + bytes_per_rank[r];
  if (mine.size() != bytes_per_rank[rank] || out.size() < offset[n]) {
    throw InvalidArgument(fmt::format(
        "rank {}: allgatherv block is {} bytes (expected {}), output {} bytes (needs {})", rank,
        mine.size(), bytes_per_rank[rank], out.size(), offset[n]));
  }
  auto block = [&](int r) {
    r = ((r % n) + n) % n;
    return out.subspan(offset[r], bytes_per_rank[r]);
  };
  if (!mine.empty()) std::memmove(block(rank).data(), mine.data(), mine.size());
  if (n == 1) return;

  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  for (int step = 0; step < n - 1; ++step) {
    comm.send_recv(right, block(rank - step), left, block(rank - step - 1));
  }
}

}  // namespace kolo::comm
