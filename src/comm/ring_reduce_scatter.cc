#include "comm/ring_reduce_scatter.h"

#include <algorithm>

#include "comm/pieces.h"
#include "comm/step_parts.h"

namespace kolo::comm::detail {

namespace {
constexpr size_t kSegmentBytes = 1 << 20;
}  // namespace

void ring_reduce_scatter(Communicator& comm, Bytes data, std::span<const size_t> first,
                         size_t element, kernels::ReduceFn combine, int shift) {
  const int n = comm.size();
  if (n == 1) return;
  const int rank = comm.rank();
  auto block = [&](int b) {
    const auto i = static_cast<size_t>(ring_position(b, n));
    return data.subspan(first[i] * element, (first[i + 1] - first[i]) * element);
  };
  size_t largest = 0;
  for (size_t b = 0; b + 1 < first.size(); ++b)
    largest = std::max(largest, first[b + 1] - first[b]);
  const size_t segment_elements = std::max<size_t>(1, kSegmentBytes / element);
  const size_t segments = detail::piece_count(largest, segment_elements);
  auto segment = [&](Bytes whole, size_t k) {
    return detail::piece_of(whole, k, segment_elements * element);
  };
  // One incoming segment at a time, in the communicator's reused scratch buffer.
  std::byte* const incoming = comm.scratch(std::min(largest, segment_elements) * element).data();

  const int right = ring_position(rank + 1, n);
  const int left = ring_position(rank - 1, n);
  for (int step = 0; step < n - 1; ++step) {
    const Bytes outgoing = block(rank - step - shift);
    const Bytes target = block(rank - step - shift - 1);
    for (size_t k = 0; k < segments; ++k) {
      const Bytes into = segment(target, k);
      comm.send_recv(right, segment(outgoing, k), left, Bytes(incoming, into.size()));
      // A large segment's fold is shared with the helper threads (step_parts.h): each element
      // still folded once, by the same operation.
      detail::for_each_part(comm.work_splitter(), comm.split_part_bytes(), element, 0, into.size(),
                            0, 0, [&](size_t begin, size_t bytes) {
                              combine(into.data() + begin, incoming + begin, bytes / element);
                            });
    }
  }
}

}  // namespace kolo::comm::detail
