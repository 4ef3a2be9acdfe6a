// Pairwise alltoallv: in round s (1..size-1) rank r sends its block for r+s while receiving the
// block from r-s, so every pair meets exactly once and no rank is flooded by all others at once.
// Each rank's own block is copied locally. Blocks may differ in size or be empty.
#include <fmt/format.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "base/errors.h"
#include "comm/collectives.h"

namespace kolo::comm {

void alltoallv(Communicator& comm, ConstBytes in, std::span<const size_t> send_bytes, Bytes out,
               std::span<const size_t> recv_bytes) {
  const int n = comm.size();
  const int rank = comm.rank();
  if (send_bytes.size() != static_cast<size_t>(n) || recv_bytes.size() != static_cast<size_t>(n)) {
    throw InvalidArgument(
        fmt::format("rank {}: alltoallv got {} send and {} receive sizes for a group of {}", rank,
                    send_bytes.size(), recv_bytes.size(), n));
  }
  std::vector<size_t> send_at(static_cast<size_t>(n) + 1, 0);
  std::vector<size_t> recv_at(static_cast<size_t>(n) + 1, 0);
  for (int r = 0; r < n; ++r) {
    send_at[r + 1] = send_at[r] + send_bytes[r];
    recv_at[r + 1] = recv_at[r] + recv_bytes[r];
  }
  if (in.size() < send_at[n] || out.size() < recv_at[n]) {
    throw InvalidArgument(
        fmt::format("rank {}: alltoallv input has {} bytes (needs {}), output {} bytes (needs {})",
                    rank, in.size(), send_at[n], out.size(), recv_at[n]));
  }
  if (send_bytes[rank] != recv_bytes[rank]) {
    throw InvalidArgument(fmt::format("rank {}: alltoallv sends itself {} bytes but expects {}",
                                      rank, send_bytes[rank], recv_bytes[rank]));
  }
  if (send_bytes[rank] > 0) {
    std::memmove(out.data() + recv_at[rank], in.data() + send_at[rank], send_bytes[rank]);
  }
  for (int step = 1; step < n; ++step) {
    const int to = (rank + step) % n;
    const int from = (rank - step + n) % n;
    comm.send_recv(to, in.subspan(send_at[to], send_bytes[to]), from,
                   out.subspan(recv_at[from], recv_bytes[from]));
  }
}

}  // namespace kolo::comm
