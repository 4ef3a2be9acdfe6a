#include "negotiation/cache_bits.h"

#include <gtest/gtest.h>

#include "base/errors.h"

namespace kolo::negotiation {
namespace {

// The AND of every rank's contribution, as the allreduce computes it.
std::vector<uint64_t> reduce_and(const std::vector<const CacheBitVector*>& ranks) {
  std::vector<uint64_t> words = ranks.front()->contribution();
  for (const CacheBitVector* rank : ranks) {
    for (size_t i = 0; i < words.size(); ++i) words[i] &= rank->contribution()[i];
  }
  return words;
}

TEST(CacheBits, ReadyWhereEveryRankHitsInvalidWhereAnyRankSaysSo) {
  // 70 bits: the hit and invalid vectors each span two words.
  CacheBitVector rank0(70), rank1(70);
  for (uint32_t bit : {1u, 5u, 64u, 69u}) rank0.mark_hit(bit);
  for (uint32_t bit : {1u, 64u, 69u}) rank1.mark_hit(bit);
  rank1.mark_invalid(69);
  rank1.mark_uncached();
  const auto reduced = reduce_and({&rank0, &rank1});
  for (const CacheBitVector* rank : {&rank0, &rank1}) {
    const CacheAgreement agreement = rank->decode(reduced, 0);
    EXPECT_EQ(agreement.ready_bits, (std::vector<uint32_t>{1, 64}));
    EXPECT_EQ(agreement.invalid_bits, (std::vector<uint32_t>{69}));
    EXPECT_TRUE(agreement.any_uncached);
    EXPECT_FALSE(agreement.any_shutdown);
    EXPECT_FALSE(agreement.any_joined);
  }
}

TEST(CacheBits, NoBitsIsJustTheFlags) {
  CacheBitVector rank0(0), rank1(0);
  rank1.mark_joined();
  rank0.mark_shutting_down();
  ASSERT_EQ(rank0.contribution().size(), 1u);
  const CacheAgreement agreement = rank0.decode(reduce_and({&rank0, &rank1}), 0);
  EXPECT_TRUE(agreement.any_joined);
  EXPECT_TRUE(agreement.any_shutdown);
  EXPECT_FALSE(agreement.any_uncached);
  EXPECT_TRUE(agreement.ready_bits.empty());
}

// A bitwise AND cannot set a bit this rank cleared: such a vector came from a corrupt peer and
// must not make this rank serve a response it has no request for.
TEST(CacheBits, RefusesBitsNoAndCouldSet) {
  CacheBitVector rank(8);
  rank.mark_hit(2);
  std::vector<uint64_t> forged = rank.contribution();
  forged[1] |= uint64_t{1} << 3;  // "every rank hit bit 3", but this rank did not
  try {
    (void)rank.decode(forged, 4);
    FAIL() << "forged hit bit accepted";
  } catch (const ProtocolError& error) {
    EXPECT_NE(std::string(error.what()).find("rank 4"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("corrupt"), std::string::npos) << error.what();
  }
}

TEST(CacheBits, RefusesAVectorOfTheWrongLength) {
  CacheBitVector rank(100);
  std::vector<uint64_t> short_vector(rank.contribution().begin(), rank.contribution().end() - 1);
  EXPECT_THROW((void)rank.decode(short_vector, 0), ProtocolError);
}

}  // namespace
}  // namespace kolo::negotiation
