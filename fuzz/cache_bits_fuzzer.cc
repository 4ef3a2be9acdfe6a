// The response cache's agreement vector (negotiation/cache_bits.h) after the bitwise-AND
// allreduce, i.e. with words from other ranks. The input gives the cache's bit count, this
// rank's marks, and the words the peers contributed. Two cases: an honest AND of this rank's
// contribution with the peers' words, which must decode consistently with what this rank marked;
// and the raw words as a corrupt peer might deliver them, which must decode or be refused with a
// ProtocolError.
#include <algorithm>
#include <cstring>

#include "fuzz/fuzz_support.h"
#include "negotiation/cache_bits.h"

namespace {

using namespace kolo;
using negotiation::CacheAgreement;
using negotiation::CacheBitVector;

// Reads the input front to back; zeros once it runs out.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint64_t take(size_t bytes) {
    uint64_t value = 0;
    for (size_t i = 0; i < bytes && pos_ < size_; ++i) value |= uint64_t{data_[pos_++]} << (8 * i);
    return value;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const auto bit_count = static_cast<uint32_t>(in.take(2) % 1025);
  CacheBitVector bits(bit_count);
  std::vector<bool> hit(bit_count), invalid(bit_count);
  const uint64_t flags = in.take(1);
  if (flags & 1) bits.mark_uncached();
  if (flags & 2) bits.mark_shutting_down();
  if (flags & 4) bits.mark_joined();
  const size_t marks = in.take(1);
  for (size_t i = 0; i < marks && bit_count > 0; ++i) {
    const uint64_t choice = in.take(2);
    const auto bit = static_cast<uint32_t>((choice >> 1) % bit_count);
    if (choice & 1) {
      bits.mark_invalid(bit);
      invalid[bit] = true;
    } else {
      bits.mark_hit(bit);
      hit[bit] = true;
    }
  }
  const std::vector<uint64_t>& mine = bits.contribution();
  std::vector<uint64_t> peers(mine.size());
  for (uint64_t& word : peers) word = in.take(8);

  // Honest: the AND of this rank's words with the peers'.
  std::vector<uint64_t> reduced = mine;
  for (size_t i = 0; i < reduced.size(); ++i) reduced[i] &= peers[i];
  const CacheAgreement agreement = bits.decode(reduced, 0);  // must not throw
  fuzz::require(std::ranges::is_sorted(agreement.ready_bits), "ready bits ascending");
  fuzz::require(std::ranges::is_sorted(agreement.invalid_bits), "invalid bits ascending");
  for (uint32_t bit : agreement.ready_bits) {
    fuzz::require(bit < bit_count && hit[bit] && !invalid[bit], "ready only where this rank hit");
  }
  for (uint32_t bit = 0; bit < bit_count; ++bit) {
    if (invalid[bit]) {
      fuzz::require(std::ranges::binary_search(agreement.invalid_bits, bit),
                    "this rank's invalid bits stay invalid");
    }
  }
  fuzz::require(!(flags & 1) || agreement.any_uncached, "this rank's uncached flag survives");
  fuzz::require(!(flags & 2) || agreement.any_shutdown, "this rank's shutdown flag survives");
  fuzz::require(!(flags & 4) || agreement.any_joined, "this rank's joined flag survives");

  // Corrupt: whatever arrived, possibly with a word missing.
  fuzz::refuses_cleanly([&] { (void)bits.decode(peers, 0); });
  if (!peers.empty()) {
    fuzz::refuses_cleanly([&] { (void)bits.decode(std::span(peers).first(peers.size() - 1), 0); });
  }
  return 0;
}
