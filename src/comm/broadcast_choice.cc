#include "comm/broadcast_choice.h"

#include <cmath>
#include <limits>

namespace kolo::comm {

namespace {
constexpr size_t kStepWorthBytes = size_t{1} << 20;  // alpha + one chunk's transfer, in bytes

int tree_depth(int ranks) {
  int depth = 0;
  while ((1 << depth) < ranks) ++depth;
  return depth;
}
}  // namespace

size_t broadcast_chain_limit(int ranks) {
  if (ranks < 3) return std::numeric_limits<size_t>::max();
  const auto extra_steps = static_cast<size_t>(ranks - 2);
  const auto saved_copies = static_cast<size_t>(tree_depth(ranks) - 1);
  return (extra_steps * kStepWorthBytes + saved_copies - 1) / saved_copies;  // rounded up
}

size_t broadcast_scatter_allgather_limit(int ranks) {
  constexpr int kFromRanks = 8;
  constexpr double kStepWorth = 128.0 * 1024;  // bytes
  if (ranks < kFromRanks) return std::numeric_limits<size_t>::max();
  const double saved = tree_depth(ranks) - 2.0 * (ranks - 1) / ranks;  // x n, > 0 from 8 ranks
  return static_cast<size_t>(std::ceil((ranks - 1) * kStepWorth / saved));
}

}  // namespace kolo::comm
