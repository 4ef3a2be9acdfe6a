// A buffer made of pieces (base/bytes.h BufferPiece) seen as one run of bytes: the host arena's
// allreduce walks it in steps and slices without a fusion buffer to pack it into first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "base/bytes.h"

namespace kolo::comm {

class PieceList {
 public:
  explicit PieceList(std::span<const BufferPiece> pieces);
  // One contiguous buffer, reduced in place.
  explicit PieceList(Bytes data)
      : whole_{data.data(), data.data(), data.size()},
        pieces_(&whole_, 1),
        starts_{0, data.size()} {}
  PieceList(const PieceList&) = delete;
  PieceList& operator=(const PieceList&) = delete;

  [[nodiscard]] size_t bytes() const { return starts_.back(); }

  // Calls fn(piece, offset_in_piece, offset_in_range, bytes) for each part of the bytes
  // [begin, begin + bytes) of the concatenation, in order.
  template <typename Fn>
  void for_each(size_t begin, size_t bytes, Fn&& fn) const {
    size_t done = 0;
    for (size_t i = first_piece(begin); done < bytes; ++i) {
      const size_t offset = begin + done - starts_[i];
      const size_t take = std::min(pieces_[i].bytes - offset, bytes - done);
      if (take > 0) fn(pieces_[i], offset, done, take);
      done += take;
    }
  }
  // dst[0, bytes) = the inputs' bytes [begin, begin + bytes).
  void gather(std::byte* dst, size_t begin, size_t bytes) const;
  // The outputs' bytes [begin, begin + bytes) = src[0, bytes).
  void scatter(const std::byte* src, size_t begin, size_t bytes) const;

 private:
  // The piece holding byte `begin` (the last non-empty one starting at or before it).
  [[nodiscard]] size_t first_piece(size_t begin) const;

  BufferPiece whole_{};  // the one piece of the contiguous form
  std::span<const BufferPiece> pieces_;
  std::vector<size_t> starts_;  // starts_[i]: where piece i begins; back(): the total
};

}  // namespace kolo::comm
