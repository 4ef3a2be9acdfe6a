#include "negotiation/cache_bits.h"

#include <fmt/format.h>

#include "base/errors.h"

namespace kolo::negotiation {

namespace {

// Word 0. Stored inverted (bit clear = "yes") so that the AND across ranks answers "does ANY
// rank ...".
constexpr uint64_t kNoUncachedFlag = uint64_t{1} << 0;
constexpr uint64_t kNotShuttingDownFlag = uint64_t{1} << 1;
constexpr uint64_t kNoneJoinedFlag = uint64_t{1} << 2;
// Not inverted: the AND answers "does EVERY rank have a caller blocked waiting".
constexpr uint64_t kWaitingFlag = uint64_t{1} << 3;

bool test(std::span<const uint64_t> words, size_t first_word, uint32_t bit) {
  return (words[first_word + bit / 64] >> (bit % 64)) & 1u;
}

}  // namespace

CacheBitVector::CacheBitVector(uint32_t bit_count) : bit_count_(bit_count) {
  const size_t words_per_vector = (size_t{bit_count} + 63) / 64;
  hit_word_ = 1;
  invalid_word_ = 1 + words_per_vector;
  words_.assign(1 + 2 * words_per_vector, ~uint64_t{0});
  // No hits yet; the flags and the invalid bits start at "no" (set).
  std::fill(words_.begin() + static_cast<std::ptrdiff_t>(hit_word_),
            words_.begin() + static_cast<std::ptrdiff_t>(invalid_word_), 0);
}

void CacheBitVector::mark_hit(uint32_t bit) {
  words_[hit_word_ + bit / 64] |= uint64_t{1} << (bit % 64);
}
void CacheBitVector::mark_invalid(uint32_t bit) { clear(invalid_word_, bit); }
void CacheBitVector::mark_uncached() { words_[0] &= ~kNoUncachedFlag; }
void CacheBitVector::mark_shutting_down() { words_[0] &= ~kNotShuttingDownFlag; }
void CacheBitVector::mark_joined() { words_[0] &= ~kNoneJoinedFlag; }
void CacheBitVector::mark_not_waiting() { words_[0] &= ~kWaitingFlag; }

void CacheBitVector::clear(size_t first_word, uint32_t bit) {
  words_[first_word + bit / 64] &= ~(uint64_t{1} << (bit % 64));
}

CacheAgreement CacheBitVector::decode(std::span<const uint64_t> reduced, int rank) const {
  if (reduced.size() != words_.size()) {
    throw ProtocolError(
        fmt::format("rank {}: the cache agreement has {} words, expected {} for {} "
                    "cache bits (ranks disagree on the cache)",
                    rank, reduced.size(), words_.size(), bit_count_));
  }
  for (size_t i = 0; i < words_.size(); ++i) {
    // An AND can clear what this rank set, never set what it cleared.
    if ((reduced[i] & ~words_[i]) != 0) {
      throw ProtocolError(fmt::format(
          "rank {}: the cache agreement's word {} is {:#x}, which no bitwise AND with this "
          "rank's {:#x} gives (corrupt data from a peer)",
          rank, i, reduced[i], words_[i]));
    }
  }
  CacheAgreement agreement;
  agreement.any_uncached = (reduced[0] & kNoUncachedFlag) == 0;
  agreement.any_shutdown = (reduced[0] & kNotShuttingDownFlag) == 0;
  agreement.any_joined = (reduced[0] & kNoneJoinedFlag) == 0;
  agreement.all_waiting = (reduced[0] & kWaitingFlag) != 0;
  for (uint32_t bit = 0; bit < bit_count_; ++bit) {
    if (!test(reduced, invalid_word_, bit)) {
      agreement.invalid_bits.push_back(bit);
    } else if (test(reduced, hit_word_, bit)) {
      agreement.ready_bits.push_back(bit);
    }
  }
  return agreement;
}

}  // namespace kolo::negotiation
