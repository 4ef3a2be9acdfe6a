// Ring reduce-scatter with uneven blocks: block b is counts[b] elements of `data`. The ring
// rounds (detail::ring_reduce_scatter with shift 1) leave rank r with the full result of its own
// block r, which is then copied to `out`.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "base/errors.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/ring_reduce_scatter.h"
#include "kernels/reduce.h"

namespace kolo::comm {

void reducescatter(Communicator& comm, Bytes data, std::span<const size_t> counts, DataType type,
                   ReduceOp op, Bytes out) {
  const kernels::ReduceFn combine = kernels::reduce_function(type, op);
  const int n = comm.size();
  const int rank = comm.rank();
  if (counts.size() != static_cast<size_t>(n)) {
    throw InvalidArgument(fmt::format(
        "rank {}: reducescatter got {} block counts for a group of {}", rank, counts.size(), n));
  }
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  detail::checked_bytes(comm, "reducescatter", data.size(), total, type);
  const size_t element = dtype_size(type);
  if (out.size() < counts[static_cast<size_t>(rank)] * element) {
    throw InvalidArgument(fmt::format("rank {}: reducescatter output has {} bytes, needs {}", rank,
                                      out.size(), counts[static_cast<size_t>(rank)] * element));
  }
  std::vector<size_t> first(static_cast<size_t>(n) + 1, 0);
  for (int b = 0; b < n; ++b) first[b + 1] = first[b] + counts[b];
  detail::ring_reduce_scatter(comm, data, first, element, combine, /*shift=*/1);
  const Bytes mine = data.subspan(first[static_cast<size_t>(rank)] * element,
                                  counts[static_cast<size_t>(rank)] * element);
  if (!mine.empty() && mine.data() != out.data())
    std::memmove(out.data(), mine.data(), mine.size());
}

}  // namespace kolo::comm
