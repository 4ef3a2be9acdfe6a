// The vector behind the controller's fast path (controller.h, steps 2-3): one word of flags, then
// one bit per response-cache entry saying "this rank's request hits it", then one per entry
// saying "this rank found it invalid". The flags and the invalid bits are stored inverted (clear
// = yes), so the bitwise-AND allreduce across ranks answers "every rank hits" and "any rank ...".
// The reduced vector is bytes from other processes: decode() refuses a vector that an AND with
// this rank's own contribution could not have produced (a bit set that this rank cleared), so a
// corrupt peer becomes a ProtocolError instead of a response served from a diverged cache.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kolo::negotiation {

struct CacheAgreement {
  bool any_uncached = false;  // some rank has requests the cache cannot answer
  bool any_shutdown = false;
  bool any_joined = false;
  bool all_waiting = false;            // every rank has a caller blocked waiting on a handle
  std::vector<uint32_t> ready_bits;    // hit on every rank and invalid on none, ascending
  std::vector<uint32_t> invalid_bits;  // invalid on some rank, ascending
};

class CacheBitVector {
 public:
  // `bit_count`: the response cache's bit_count(), the same on every rank.
  explicit CacheBitVector(uint32_t bit_count);

  void mark_hit(uint32_t bit);
  void mark_invalid(uint32_t bit);
  void mark_uncached();
  void mark_shutting_down();
  void mark_joined();
  void mark_not_waiting();

  // What this rank contributes to the bitwise-AND allreduce.
  [[nodiscard]] const std::vector<uint64_t>& contribution() const { return words_; }

  // Reads the allreduce's result. Throws ProtocolError naming `rank` (this rank) if it has the
  // wrong length or a bit set that this rank's contribution had clear.
  [[nodiscard]] CacheAgreement decode(std::span<const uint64_t> reduced, int rank) const;

 private:
  void clear(size_t first_word, uint32_t bit);

  uint32_t bit_count_;
  size_t hit_word_;      // first word of the hit bits
  size_t invalid_word_;  // first word of the (inverted) invalid bits
  std::vector<uint64_t> words_;
};

}  // namespace kolo::negotiation
