// Ring allreduce: reduce-scatter then allgather over a ring of ranks. The buffer is cut into
// `size` chunks on element boundaries (some may be empty when count < size). In round s of the
// reduce-scatter rank r sends chunk r-s to its right neighbour while receiving chunk r-s-1 from
// its left one and folds it in; after size-1 rounds rank r owns the full result of chunk r+1,
// which the allgather rounds pass around. Each chunk's result is computed on exactly one rank and
// copied everywhere else, so every rank ends with bitwise identical bytes.
#include <algorithm>
#include <memory>
#include <vector>

#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/reduce.h"

namespace kolo::comm {

namespace {
constexpr size_t kSegmentBytes = 1 << 20;
}  // namespace

void allreduce_ring(Communicator& comm, Bytes data, size_t count, DataType type, ReduceOp op) {
  const ReduceFn combine = reduce_function(type, op);
  detail::checked_bytes(comm, "allreduce_ring", data.size(), count, type);
  const int n = comm.size();
  if (n == 1 || count == 0) return;

  const size_t element = dtype_size(type);
  const auto chunks = static_cast<size_t>(n);
  std::vector<size_t> first(chunks + 1);  // chunk c is elements [first[c], first[c+1])
  for (size_t c = 0; c <= chunks; ++c) {
    first[c] = count / chunks * c + std::min(c, count % chunks);
  }
  auto chunk = [&](int c) {
    const auto i = static_cast<size_t>(c);
    return data.subspan(first[i] * element, (first[i + 1] - first[i]) * element);
  };
  auto wrap = [n](int r) { return ((r % n) + n) % n; };

  const int rank = comm.rank();
  const int right = wrap(rank + 1);
  const int left = wrap(rank - 1);
  // Each reduce-scatter step runs in segments so that a segment is folded in while it is still
  // in cache (and the peer keeps filling the socket meanwhile). Every rank uses the same segment
  // count, taken from the largest chunk; tail segments of smaller chunks are simply empty.
  const size_t segment_elements = std::max<size_t>(1, kSegmentBytes / element);
  const size_t largest = first[1] - first[0];
  const size_t segments = (largest + segment_elements - 1) / segment_elements;
  auto segment = [&](Bytes whole, size_t k) {
    const size_t begin = std::min(whole.size(), k * segment_elements * element);
    return whole.subspan(begin, std::min(whole.size() - begin, segment_elements * element));
  };
  // Scratch for one incoming segment, allocated per call (a pooled buffer is a later optimisation).
  const auto incoming =
      std::make_unique_for_overwrite<std::byte[]>(std::min(largest, segment_elements) * element);

  for (int step = 0; step < n - 1; ++step) {
    const Bytes outgoing = chunk(wrap(rank - step));
    const Bytes target = chunk(wrap(rank - step - 1));
    for (size_t k = 0; k < segments; ++k) {
      const Bytes into = segment(target, k);
      comm.send_recv(right, segment(outgoing, k), left, Bytes(incoming.get(), into.size()));
      combine(into.data(), incoming.get(), into.size() / element);
    }
  }
  for (int step = 0; step < n - 1; ++step) {
    comm.send_recv(right, chunk(wrap(rank + 1 - step)), left, chunk(wrap(rank - step)));
  }
}

}  // namespace kolo::comm
