// Where automatic allreduce turns from recursive doubling to the ring: unchanged up to 4 ranks,
// growing with the ring's step count beyond (the figures bench/scaling/model.py derives from the
// same step counts), never below the configured limit, and 0 (ring always) kept.
#include "comm/allreduce_choice.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kolo::comm
