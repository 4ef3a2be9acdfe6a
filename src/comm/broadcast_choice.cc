#include "comm/broadcast_choice.h"

#include <cmath>
#include <limits>

namespace kolo::comm {

namespace {
constexpr size_t kStepWorthBytes = size_t{1} << 20;  // alpha + one chunk's transfer, in bytes
constexpr int kScatterAllgatherFromRanks = 8;
constexpr double kScatterAllgatherStepWorth = 128.0 * 1024;  // alpha / beta, in bytes

int tree_depth(int ranks) {
  int depth = 0;
  while ((1 << depth) < ranks) ++depth;
  return depth;
}
}  // namespace

size_t broadcast_chain_limit(int ranks) {
  if (ranks < 3) return std::numeric_limits<size_t>::max();
  if (ranks >= kScatterAllgatherFromRanks) {
    return static_cast<size_t>(ranks - 1) * kBroadcastChunkBytes;
  }
  const auto extra_steps = static_cast<size_t>(ranks - 2);
  const auto saved_copies = static_cast<size_t>(tree_depth(ranks) - 1);
  return (extra_steps * kStepWorthBytes + saved_copies - 1) / saved_copies;  // rounded up
}

size_t broadcast_scatter_allgather_limit(int ranks) {
  if (ranks < kScatterAllgatherFromRanks) return std::numeric_limits<size_t>::max();
  const int depth = tree_depth(ranks);
  const double spread = 2.0 * (ranks - 1) / ranks;  // its bytes per link, x n
  const double extra_steps = (ranks - 1) * kScatterAllgatherStepWorth;
  const auto segment = static_cast<double>(kBroadcastChunkBytes);
  // Within one segment every tree level forwards the whole buffer: (2 depth - 1) n.
  const double below_segment = extra_steps / (2.0 * depth - 1 - spread);
  if (below_segment <= segment) return static_cast<size_t>(std::ceil(below_segment));
  // Beyond, the root's depth n and the last segment's descent: depth n + (depth - 1) segments.
  return static_cast<size_t>(std::ceil((extra_steps - (depth - 1) * segment) / (depth - spread)));
}

}  // namespace kolo::comm
