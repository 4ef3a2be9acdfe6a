// Ring reduce-scatter with uneven blocks: block b is counts[b] elements of `data`. In round s
// rank r sends block r-s-1 (partially reduced) to its right neighbour while receiving block
// r-s-2 from its left one and folding it in, so after size-1 rounds rank r holds the full
// result of its own block r. Rounds run in segments (the same count on every rank, from the
// largest block) so an incoming segment is folded in while it is still in cache.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "base/errors.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/reduce.h"

namespace kolo::comm {

namespace {
constexpr size_t kSegmentBytes = 1 << 20;
}  // namespace

void reducescatter(Communicator& comm, Bytes data, std::span<const size_t> counts, DataType type,
                   ReduceOp op, Bytes out) {
  const ReduceFn combine = reduce_function(type, op);
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
  auto wrap = [n](int r) { return ((r % n) + n) % n; };
  auto block = [&](int b) {
    const auto i = static_cast<size_t>(wrap(b));
    return data.subspan(first[i] * element, counts[i] * element);
  };

  if (n > 1) {
    const int right = wrap(rank + 1);
    const int left = wrap(rank - 1);
    const size_t segment_elements = std::max<size_t>(1, kSegmentBytes / element);
    const size_t largest = *std::max_element(counts.begin(), counts.end());
    const size_t segments = (largest + segment_elements - 1) / segment_elements;
    auto segment = [&](Bytes whole, size_t k) {
      const size_t begin = std::min(whole.size(), k * segment_elements * element);
      return whole.subspan(begin, std::min(whole.size() - begin, segment_elements * element));
    };
    const auto incoming =
        std::make_unique_for_overwrite<std::byte[]>(std::min(largest, segment_elements) * element);
    for (int step = 0; step < n - 1; ++step) {
      const Bytes outgoing = block(rank - step - 1);
      const Bytes target = block(rank - step - 2);
      for (size_t k = 0; k < segments; ++k) {
        const Bytes into = segment(target, k);
        comm.send_recv(right, segment(outgoing, k), left, Bytes(incoming.get(), into.size()));
        if (!into.empty()) combine(into.data(), incoming.get(), into.size() / element);
      }
    }
  }
  const Bytes mine = block(rank);
  if (!mine.empty() && mine.data() != out.data())
    std::memmove(out.data(), mine.data(), mine.size());
}

}  // namespace kolo::comm
