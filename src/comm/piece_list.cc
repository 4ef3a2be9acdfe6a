#include "comm/piece_list.h"

#include <algorithm>
#include <cstring>

#include "base/copy_bytes.h"

namespace kolo::comm {

PieceList::PieceList(std::span<const BufferPiece> pieces) : pieces_(pieces) {
  starts_.reserve(pieces.size() + 1);
  size_t total = 0;
  for (const BufferPiece& piece : pieces) {
    starts_.push_back(total);
    total += piece.bytes;
  }
  starts_.push_back(total);
}

size_t PieceList::first_piece(size_t begin) const {
  // upper_bound over the starts of the pieces: the first piece starting after `begin`, minus one.
  const auto after = std::upper_bound(starts_.begin(), starts_.end() - 1, begin);
  return after == starts_.begin() ? 0 : static_cast<size_t>(after - starts_.begin()) - 1;
}

void PieceList::gather(std::byte* dst, size_t begin, size_t bytes) const {
  for_each(begin, bytes, [&](const BufferPiece& piece, size_t offset, size_t at, size_t n) {
    copy_bytes(dst + at, piece.input + offset, n);
  });
}

void PieceList::scatter(const std::byte* src, size_t begin, size_t bytes) const {
  for_each(begin, bytes, [&](const BufferPiece& piece, size_t offset, size_t at, size_t n) {
    copy_bytes(piece.output + offset, src + at, n);
  });
}

}  // namespace kolo::comm
