// Ring allreduce: reduce-scatter then allgather over a ring of ranks. The buffer is cut into
// `size` chunks on element boundaries (some may be empty when count < size). In round s of the
// reduce-scatter rank r sends chunk r-s to its right neighbour while receiving chunk r-s-1 from
// its left one and folds it in; after size-1 rounds rank r owns the full result of chunk r+1,
// which the allgather rounds pass around. Each chunk's result is computed on exactly one rank and
// copied everywhere else, so every rank ends with bitwise identical bytes.
#include <algorithm>
#include <vector>

#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/ring_reduce_scatter.h"
#include "kernels/reduce.h"

namespace kolo::comm {

void allreduce_ring(Communicator& comm, Bytes data, size_t count, DataType type, ReduceOp op,
                    const kernels::ResultScale& scale) {
  const kernels::ReduceFn combine = kernels::reduce_function(type, op);
  detail::checked_bytes(comm, "allreduce_ring", data.size(), count, type);
  scale.check(type);
  const int n = comm.size();
  if (n == 1 || count == 0) return scale.apply(data.data(), count, type);

  const size_t element = dtype_size(type);
  const auto chunks = static_cast<size_t>(n);
  std::vector<size_t> first(chunks + 1);  // chunk c is elements [first[c], first[c+1])
  for (size_t c = 0; c <= chunks; ++c) {
    first[c] = count / chunks * c + std::min(c, count % chunks);
  }
  auto chunk = [&](int c) {
    const auto i = static_cast<size_t>(detail::ring_position(c, n));
    return data.subspan(first[i] * element, (first[i + 1] - first[i]) * element);
  };
  detail::ring_reduce_scatter(comm, data, first, element, combine, /*shift=*/0);
  // Rank r now owns chunk r+1; scale it (the only rank that computed it) and pass the results
  // around the ring.
  const int rank = comm.rank();
  const Bytes owned = chunk(rank + 1);
  scale.apply(owned.data(), owned.size() / element, type);
  const int right = detail::ring_position(rank + 1, n);
  const int left = detail::ring_position(rank - 1, n);
  for (int step = 0; step < n - 1; ++step) {
    comm.send_recv(right, chunk(rank + 1 - step), left, chunk(rank - step));
  }
}

}  // namespace kolo::comm
