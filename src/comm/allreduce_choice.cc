#include "comm/allreduce_choice.h"

#include <algorithm>
#include <cmath>

namespace kolo::comm {

namespace {

// The ring's extra steps over recursive doubling's, per extra byte of transfer plus fold that
// recursive doubling pays (both per byte of the buffer), for p ranks: step counts as in
// allreduce_ring.cc and allreduce_recursive_doubling.cc (extra ranks of a non-power of two fold
// in before and get the result after: two more steps, one more whole transfer and fold).
double steps_per_byte_saved(int p) {
  int rounds = 0;
  while ((2 << rounds) <= p) ++rounds;
  const bool extra = (1 << rounds) != p;
  const double doubling_steps = rounds + (extra ? 2 : 0);
  const double doubling_work = doubling_steps + rounds + (extra ? 1 : 0);  // transfers + folds
  const double ring_steps = 2.0 * (p - 1);
  const double ring_work = 3.0 * (p - 1) / p;  // 2(p-1)/p transferred + (p-1)/p folded
  return (ring_steps - doubling_steps) / (doubling_work - ring_work);
}

constexpr int kTunedRanks = 4;

}  // namespace

size_t recursive_doubling_limit(size_t small_message_bytes, int ranks) {
  if (ranks <= kTunedRanks) return small_message_bytes;
  const double scale =
      std::max(1.0, steps_per_byte_saved(ranks) / steps_per_byte_saved(kTunedRanks));
  return static_cast<size_t>(std::llround(static_cast<double>(small_message_bytes) * scale));
}

}  // namespace kolo::comm
