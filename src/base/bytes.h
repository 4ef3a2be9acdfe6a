// Byte spans, the currency of every layer that moves data without knowing what it holds
// (transports, collectives, backends).
#pragma once

#include <cstddef>
#include <span>

namespace kolo {

using Bytes = std::span<std::byte>;
using ConstBytes = std::span<const std::byte>;

}  // namespace kolo
