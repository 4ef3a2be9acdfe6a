#include "comm/allgather_choice.h"

namespace kolo::comm {

namespace {
bool power_of_two(int ranks) { return ranks > 0 && (ranks & (ranks - 1)) == 0; }
}  // namespace

bool allgather_doubling_serves(int ranks, size_t total_bytes) {
  return total_bytes <= kAllgatherDoublingMaxBytes && power_of_two(ranks) && ranks >= 4;
}

bool allgather_bruck_serves(int ranks, size_t total_bytes) {
  return total_bytes <= kAllgatherDoublingMaxBytes && !power_of_two(ranks) && ranks >= 5;
}

}  // namespace kolo::comm
