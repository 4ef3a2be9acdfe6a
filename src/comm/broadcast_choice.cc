#include "comm/broadcast_choice.h"

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

}  // namespace kolo::comm
