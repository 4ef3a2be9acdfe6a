#include "comm/allreduce_choice.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace kolo::comm {

namespace {

// Step counts per byte of the buffer, as in allreduce_ring.cc, allreduce_recursive_doubling.cc
// and allreduce_halving_doubling.cc (bench/scaling/model.py has the same).
struct Cost {
  double steps;
  double work;  // bytes transferred + bytes folded (each weighed alike), per byte of the buffer
};

int log2_floor(int p) {
  int rounds = 0;
  while ((2 << rounds) <= p) ++rounds;
  return rounds;
}

Cost ring(int p) {
  return {2.0 * (p - 1), 3.0 * (p - 1) / p};  // 2(p-1)/p transferred + (p-1)/p folded
}

// Extra ranks of a non-power of two fold in before and get the result after: two more steps,
// one more whole transfer and fold.
Cost recursive_doubling(int p) {
  const int rounds = log2_floor(p);
  const bool extra = (1 << rounds) != p;
  const double steps = rounds + (extra ? 2 : 0);
  return {steps, steps + rounds + (extra ? 1 : 0)};
}

Cost halving_doubling(int p) {
  const int rounds = log2_floor(p);
  const double core = 1 << rounds;
  const bool extra = core != p;
  const double core_work = 3.0 * (core - 1) / core;
  // Extra ranks: the buffer in and folded, and the result back out.
  return {2.0 * rounds + (extra ? 2 : 0), core_work + (extra ? 3.0 : 0.0)};
}

// The ring's extra steps over `other`'s, per extra byte of work `other` pays.
double steps_per_byte_saved(Cost other, int p) {
  const Cost r = ring(p);
  return (r.steps - other.steps) / (other.work - r.work);
}

constexpr int kTunedRanks = 4;

// small_message_bytes is the crossover where the ring's extra steps at 4 ranks cost as much as
// recursive doubling's extra bytes: it stands for the link's alpha/beta in those units.
size_t scaled(size_t small_message_bytes, double steps_per_byte) {
  const double scale = std::max(
      1.0, steps_per_byte / steps_per_byte_saved(recursive_doubling(kTunedRanks), kTunedRanks));
  return static_cast<size_t>(std::llround(static_cast<double>(small_message_bytes) * scale));
}

}  // namespace

size_t recursive_doubling_limit(size_t small_message_bytes, int ranks) {
  if (ranks <= kTunedRanks) return small_message_bytes;
  return scaled(small_message_bytes, steps_per_byte_saved(recursive_doubling(ranks), ranks));
}

size_t halving_doubling_limit(size_t small_message_bytes, int ranks) {
  if (ranks < kHalvingDoublingMinRanks) return 0;
  if (std::has_single_bit(static_cast<unsigned>(ranks))) return std::numeric_limits<size_t>::max();
  return scaled(small_message_bytes, steps_per_byte_saved(halving_doubling(ranks), ranks));
}

}  // namespace kolo::comm
