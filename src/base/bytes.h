// Byte spans, the currency of every layer that moves data without knowing what it holds
// (transports, collectives, backends).
#pragma once

#include <cstddef>
#include <span>

namespace kolo {

using Bytes = std::span<std::byte>;
using ConstBytes = std::span<const std::byte>;

// One tensor of a buffer that is the concatenation of several (a fused allreduce without a
// fusion buffer): read from `input`, the result written to `output` (the same memory for an
// in-place operation). `bytes` is a whole number of elements.
struct BufferPiece {
  const std::byte* input;
  std::byte* output;
  size_t bytes;
};

}  // namespace kolo
