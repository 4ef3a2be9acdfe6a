// Internal to comm/: cutting a buffer into pieces of a fixed size, the segmenting every pipelined
// collective shares (broadcast's tree and chain, the ring reduce-scatter, the pairwise
// exchange-and-fold): piece k while piece k + 1 is on the wire.
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

}  // namespace kolo::comm::detail
