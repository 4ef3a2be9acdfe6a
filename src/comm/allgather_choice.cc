#include "comm/allgather_choice.h"

#include <bit>

namespace kolo::comm {

namespace {
bool power_of_two(int ranks) {
  return ranks > 0 && std::has_single_bit(static_cast<unsigned>(ranks));
}
}  // namespace

bool allgather_doubling_serves(int ranks, size_t total_bytes) {
  return total_bytes <= kAllgatherDoublingMaxBytes && power_of_two(ranks) && ranks >= 4;
}

bool allgather_bruck_serves(int ranks, size_t total_bytes) {
  return total_bytes <= kAllgatherDoublingMaxBytes && !power_of_two(ranks) && ranks >= 5;
}

}  // namespace kolo::comm
