// Where automatic allreduce turns from recursive doubling to the ring: unchanged up to 4 ranks,
// growing with the ring's step count beyond (the figures bench/scaling/model.py derives from the
// same step counts), never below the configured limit, and 0 (ring always) kept. Halving-doubling
// from 8 ranks: unlimited on powers of two, up to a scaled limit on other sizes.
#include "comm/allreduce_choice.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace kolo::comm {
namespace {

constexpr size_t kDefault = 64 * 1024;

TEST(RecursiveDoublingLimit, IsTheConfiguredLimitUpToFourRanks) {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    EXPECT_EQ(recursive_doubling_limit(kDefault, ranks), kDefault) << ranks << " ranks";
  }
}

TEST(RecursiveDoublingLimit, NeverFallsBelowTheConfiguredLimit) {
  // 5..7 ranks: recursive doubling's fold-in steps for a non-power of two eat its advantage.
  for (int ranks = 5; ranks <= 1024; ++ranks) {
    EXPECT_GE(recursive_doubling_limit(kDefault, ranks), kDefault) << ranks << " ranks";
  }
  EXPECT_EQ(recursive_doubling_limit(kDefault, 6), kDefault);
}

TEST(RecursiveDoublingLimit, GrowsWithPowersOfTwo) {
  // Steps the ring spends beyond recursive doubling per extra byte recursive doubling moves and
  // folds: 4 ranks 4/1.75, 8 ranks 11/3.375, 256 ranks 502/13.0117.
  EXPECT_NEAR(static_cast<double>(recursive_doubling_limit(kDefault, 8)),
              kDefault * (11 / 3.375) / (4 / 1.75), 1.0);
  EXPECT_NEAR(static_cast<double>(recursive_doubling_limit(kDefault, 256)),
              kDefault * (502 / (16 - 3.0 * 255 / 256)) / (4 / 1.75), 1.0);
  size_t previous = kDefault;
  for (int ranks = 8; ranks <= 1024; ranks *= 2) {
    const size_t limit = recursive_doubling_limit(kDefault, ranks);
    EXPECT_GT(limit, previous) << ranks << " ranks";
    previous = limit;
  }
}

TEST(RecursiveDoublingLimit, ZeroMeansRingAlways) {
  EXPECT_EQ(recursive_doubling_limit(0, 256), 0U);
}

TEST(HalvingDoublingLimit, NeverBelowEightRanks) {
  for (int ranks = 1; ranks < kHalvingDoublingMinRanks; ++ranks) {
    EXPECT_EQ(halving_doubling_limit(kDefault, ranks), 0U) << ranks << " ranks";
  }
}

TEST(HalvingDoublingLimit, UnlimitedOnPowersOfTwo) {
  // Same bytes moved and folded as the ring, 2 log2 p steps instead of 2(p-1).
  for (int ranks = 8; ranks <= 4096; ranks *= 2) {
    EXPECT_EQ(halving_doubling_limit(kDefault, ranks), SIZE_MAX) << ranks << " ranks";
    EXPECT_EQ(halving_doubling_limit(0, ranks), SIZE_MAX) << ranks << " ranks";
  }
}

TEST(HalvingDoublingLimit, ScaledOnOtherSizesAboveTheRecursiveDoublingLimit) {
  // 12 ranks: ring 22 steps and 3*11/12 bytes of work, halving-doubling over a core of 8 with 4
  // extra ranks 8 steps and 3*7/8 + 3 (their buffer in and folded, the result out); 14 steps /
  // 2.875 bytes against 4 ranks' 4 / 1.75.
  EXPECT_NEAR(static_cast<double>(halving_doubling_limit(kDefault, 12)),
              kDefault * (14 / 2.875) / (4 / 1.75), 1.0);
  for (int ranks = 9; ranks <= 1024; ++ranks) {
    if ((ranks & (ranks - 1)) == 0) continue;
    const size_t limit = halving_doubling_limit(kDefault, ranks);
    EXPECT_GE(limit, recursive_doubling_limit(kDefault, ranks)) << ranks << " ranks";
    EXPECT_LT(limit, SIZE_MAX) << ranks << " ranks";
    EXPECT_EQ(halving_doubling_limit(0, ranks), 0U) << ranks << " ranks";
  }
}

}  // namespace
}  // namespace kolo::comm
