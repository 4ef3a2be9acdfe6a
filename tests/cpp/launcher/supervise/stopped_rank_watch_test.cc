#include "launcher/supervise/stopped_rank_watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

namespace kolo::launcher {
namespace {

using std::chrono::seconds;

TEST(StoppedRankWatch, ReportsOnlyARankStoppedWithoutABreakPastTheAllowance) {
  StoppedRankWatch watch(seconds(5));
  const auto t0 = Clock::time_point{} + seconds(100);
  EXPECT_FALSE(watch.overdue(1, true, t0));
  EXPECT_FALSE(watch.overdue(1, true, t0 + seconds(5)));   // exactly the allowance: not yet
  EXPECT_FALSE(watch.overdue(1, false, t0 + seconds(6)));  // continued: the clock restarts
  EXPECT_FALSE(watch.overdue(1, true, t0 + seconds(7)));
  EXPECT_FALSE(watch.overdue(1, true, t0 + seconds(11)));
  EXPECT_TRUE(watch.overdue(1, true, t0 + seconds(13)));
  EXPECT_FALSE(watch.overdue(1, true, t0 + seconds(20)));   // once
  EXPECT_FALSE(watch.overdue(2, false, t0 + seconds(20)));  // a running rank never
}

TEST(StoppedRankWatch, LooksAtProcAtMostOnceASecond) {
  StoppedRankWatch watch(seconds(5));
  const auto t0 = Clock::time_point{} + seconds(100);
  EXPECT_TRUE(watch.time_to_look(t0));
  EXPECT_FALSE(watch.time_to_look(t0 + std::chrono::milliseconds(999)));
  EXPECT_TRUE(watch.time_to_look(t0 + seconds(1)));
}

TEST(StoppedRankWatch, AllowanceIsThePeerTimeoutTheRanksUsePlusTheGrace) {
  EXPECT_EQ(stopped_rank_allowance({}, 5.0), seconds(35));
  EXPECT_EQ(stopped_rank_allowance({{"HOROVOD_PEER_TIMEOUT", "10"}}, 2.0), seconds(12));
  EXPECT_EQ(
      stopped_rank_allowance({{"HOROVOD_PEER_TIMEOUT", "10"}, {"KOLO_PEER_TIMEOUT", "3"}}, 2.0),
      seconds(5));
  EXPECT_EQ(stopped_rank_allowance({{"KOLO_PEER_TIMEOUT", "soon"}}, 1.0), seconds(31));
  // The elastic driver reads the same value: an empty KOLO_ variable counts as unset.
  EXPECT_EQ(rank_peer_timeout_seconds({{"KOLO_PEER_TIMEOUT", ""}, {"HOROVOD_PEER_TIMEOUT", "7"}}),
            7.0);
}

TEST(StoppedRankWatch, FindsTheGroupOfAStoppedProcessAndNotOfARunningOne) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    for (;;) ::pause();
  }
  ::setpgid(pid, pid);
  EXPECT_EQ(stopped_process_groups().count(pid), 0u);
  ::kill(pid, SIGSTOP);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, WUNTRACED), pid);
  EXPECT_EQ(stopped_process_groups().count(pid), 1u);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
}

}  // namespace
}  // namespace kolo::launcher
