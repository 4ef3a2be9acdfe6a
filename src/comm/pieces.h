// Internal to comm/: cutting a buffer into pieces of a fixed size, the segmenting every pipelined
// collective shares (broadcast's tree and chain, the ring reduce-scatter, the pairwise
// exchange-and-fold): piece k while piece k + 1 is on the wire; and a rank's slice of a buffer.
#pragma once

#include <algorithm>
#include <cstddef>

namespace kolo::comm::detail {

// How many pieces of `piece_bytes` cover `bytes` (the last one may be shorter); any unit will
// do as long as both are in it.
inline size_t piece_count(size_t bytes, size_t piece_bytes) {
  return (bytes + piece_bytes - 1) / piece_bytes;
}

// Piece k of `whole` (Bytes or ConstBytes): shorter at the end, empty past it.
template <typename Span>
Span piece_of(Span whole, size_t k, size_t piece_bytes) {
  const size_t begin = std::min(whole.size(), k * piece_bytes);
  return whole.subspan(begin, std::min(whole.size() - begin, piece_bytes));
}

// Rank r's share of `elements` split among `ranks` (the first `elements % ranks` ranks one more):
// the slice each rank folds in the shared-memory allreduces.
struct Slice {
  size_t begin;  // elements
  size_t count;
};

inline Slice slice_of(size_t elements, int ranks, int r) {
  const auto n = static_cast<size_t>(ranks);
  const auto i = static_cast<size_t>(r);
  return {elements / n * i + std::min(i, elements % n), elements / n + (i < elements % n ? 1 : 0)};
}

}  // namespace kolo::comm::detail
