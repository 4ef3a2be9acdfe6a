// reducescatter: the host's shared-memory arena when the group is exactly one host's ranks (see
// detail::arena_serves), else the ring with uneven blocks: block b is counts[b] elements of
// `data`. The ring rounds (detail::ring_reduce_scatter with shift 1) leave rank r with the full
// result of its own block r, which is then copied to `out`.
#include <cstring>
#include <numeric>
#include <vector>

#include "base/copy_bytes.h"
#include "comm/arena_wait.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/ring_reduce_scatter.h"
#include "kernels/reduce.h"

namespace kolo::comm {

void reducescatter(Communicator& comm, Bytes data, std::span<const size_t> counts, DataType type,
                   ReduceOp op, Bytes out) {
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  if (detail::arena_serves(comm, total * dtype_size(type), detail::kOversubscribedArenaBytes)) {
    return reducescatter_shared_memory(comm, data, counts, type, op, out);
  }
  reducescatter_ring(comm, data, counts, type, op, out);
}

void reducescatter_ring(Communicator& comm, Bytes data, std::span<const size_t> counts,
                        DataType type, ReduceOp op, Bytes out) {
  const kernels::ReduceFn combine = kernels::reduce_function(type, op);
  const std::vector<size_t> first =
      detail::checked_reducescatter(comm, "reducescatter", data, counts, type, out);
  const size_t element = dtype_size(type);
  const auto rank = static_cast<size_t>(comm.rank());
  detail::ring_reduce_scatter(comm, data, first, element, combine, /*shift=*/1);
  const Bytes mine = data.subspan(first[rank] * element, counts[rank] * element);
  if (!mine.empty() && mine.data() != out.data()) move_bytes(out.data(), mine.data(), mine.size());
}

}  // namespace kolo::comm
