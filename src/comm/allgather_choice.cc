#include "comm/allgather_choice.h"

namespace kolo::comm {

bool allgather_doubling_serves(int ranks, size_t total_bytes) {
  if (total_bytes > kAllgatherDoublingMaxBytes) return false;
  const bool power_of_two = ranks > 0 && (ranks & (ranks - 1)) == 0;
  return power_of_two ? ranks >= 4 : ranks >= 6;
}

}  // namespace kolo::comm
