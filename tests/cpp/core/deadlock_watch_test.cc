#include "core/deadlock_watch.h"

#include <gtest/gtest.h>

namespace kolo::core {
namespace {

using std::chrono::milliseconds;

TEST(DeadlockWatchTest, FiresOnceEveryRankWaitedWithoutProgressForTheTimeout) {
  DeadlockWatch watch(milliseconds(1000));
  const Clock::time_point t0{};
  EXPECT_FALSE(watch.observe(true, false, t0));
  EXPECT_FALSE(watch.observe(true, false, t0 + milliseconds(999)));
  EXPECT_TRUE(watch.observe(true, false, t0 + milliseconds(1000)));
  // It starts over after firing.
  EXPECT_FALSE(watch.observe(true, false, t0 + milliseconds(1500)));
  EXPECT_TRUE(watch.observe(true, false, t0 + milliseconds(2500)));
}

TEST(DeadlockWatchTest, ProgressOrARankNotWaitingStartsOver) {
  DeadlockWatch watch(milliseconds(1000));
  const Clock::time_point t0{};
  EXPECT_FALSE(watch.observe(true, false, t0));
  EXPECT_FALSE(watch.observe(false, false, t0 + milliseconds(900)));  // a rank got busy
  EXPECT_FALSE(watch.observe(true, false, t0 + milliseconds(1200)));
  EXPECT_FALSE(watch.observe(true, true, t0 + milliseconds(2100)));  // something completed
  EXPECT_FALSE(watch.observe(true, false, t0 + milliseconds(2200)));
  EXPECT_FALSE(watch.observe(true, false, t0 + milliseconds(3100)));
  EXPECT_TRUE(watch.observe(true, false, t0 + milliseconds(3200)));
}

TEST(DeadlockWatchTest, AZeroTimeoutNeverFires) {
  DeadlockWatch watch(milliseconds(0));
  EXPECT_FALSE(watch.observe(true, false, Clock::time_point{}));
  EXPECT_FALSE(watch.observe(true, false, Clock::time_point{} + std::chrono::hours(1)));
}

TEST(DeadlockWatchTest, MessageNamesTensorSubmittersAndMissingRanks) {
  negotiation::PendingTensor tensor{"grad.w", {0, 1}, {2}, Clock::time_point{}};
  const std::string message = deadlock_message(tensor, milliseconds(30000));
  EXPECT_NE(message.find("tensor 'grad.w' was submitted by rank 0 and rank 1 but not by rank 2"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("30 s"), std::string::npos) << message;
}

}  // namespace
}  // namespace kolo::core
