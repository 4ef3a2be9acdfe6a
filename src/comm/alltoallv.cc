// alltoallv: the host's shared-memory arena whenever the group is exactly one host's ranks, else
// pairwise. Unlike the other collectives the choice cannot depend on the size: each rank knows
// only its own row and column of the size matrix, and every rank must choose alike. Pairwise: in
// round s (1..size-1) rank r sends its block for r+s while receiving the block from r-s, so every
// pair meets exactly once and no rank is flooded by all others at once. Each rank's own block is
// copied locally. Blocks may differ in size or be empty.
#include <cstring>

#include "base/copy_bytes.h"
#include "comm/collective_arena.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"

namespace kolo::comm {

void alltoallv(Communicator& comm, ConstBytes in, std::span<const size_t> send_bytes, Bytes out,
               std::span<const size_t> recv_bytes) {
  if (const CollectiveArena* arena = comm.arena(); arena != nullptr && arena->max_bytes > 0) {
    return alltoallv_shared_memory(comm, in, send_bytes, out, recv_bytes);
  }
  alltoallv_pairwise(comm, in, send_bytes, out, recv_bytes);
}

void alltoallv_pairwise(Communicator& comm, ConstBytes in, std::span<const size_t> send_bytes,
                        Bytes out, std::span<const size_t> recv_bytes) {
  const detail::AlltoallOffsets at =
      detail::checked_alltoall(comm, "alltoallv", in, send_bytes, out, recv_bytes);
  const int n = comm.size();
  const int rank = comm.rank();
  if (send_bytes[rank] > 0) {
    move_bytes(out.data() + at.recv[rank], in.data() + at.send[rank], send_bytes[rank]);
  }
  for (int step = 1; step < n; ++step) {
    const int to = (rank + step) % n;
    const int from = (rank - step + n) % n;
    comm.send_recv(to, in.subspan(at.send[to], send_bytes[to]), from,
                   out.subspan(at.recv[from], recv_bytes[from]));
  }
}

}  // namespace kolo::comm
