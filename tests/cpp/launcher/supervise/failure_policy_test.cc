#include "launcher/supervise/failure_policy.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kolo::launcher {
namespace {

using namespace std::chrono_literals;
using Action = FailurePolicy::Action;
using Verdict = FailurePolicy::Verdict;

const Clock::time_point t0 = Clock::now();
FailurePolicy::Timings timings() { return {5s, 3s, 500ms}; }

TEST(ExitStatus, DescribesCodesAndSignals) {
  EXPECT_EQ(ExitStatus::exited_with(3).describe(), "exited with code 3");
  EXPECT_EQ(ExitStatus::killed_by(SIGKILL).describe(), "was killed by signal SIGKILL (9)");
  EXPECT_EQ(ExitStatus::killed_by(SIGKILL).shell_code(), 137);
  EXPECT_EQ(ExitStatus::exited_with(3).shell_code(), 3);
  EXPECT_TRUE(ExitStatus::exited_with(0).success());
  EXPECT_FALSE(ExitStatus::killed_by(SIGTERM).success());
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
}

TEST(ExitStatus, FromRealWaitStatuses) {
  pid_t exiting = ::fork();
  if (exiting == 0) ::_exit(42);
  int status = 0;
  ASSERT_EQ(::waitpid(exiting, &status, 0), exiting);
  EXPECT_EQ(ExitStatus::from_wait_status(status), ExitStatus::exited_with(42));

  pid_t killed = ::fork();
  if (killed == 0) {
    ::pause();
    ::_exit(0);
  }
  ::kill(killed, SIGKILL);
  ASSERT_EQ(::waitpid(killed, &status, 0), killed);
  EXPECT_EQ(ExitStatus::from_wait_status(status), ExitStatus::killed_by(SIGKILL));
}

TEST(FailurePolicy, AllSucceedExitsZeroWithoutActions) {
  FailurePolicy policy(2, timings());
  EXPECT_EQ(policy.on_rank_exit(0, ExitStatus::exited_with(0), t0), Verdict::success);
  EXPECT_FALSE(policy.finished());
  EXPECT_EQ(policy.due(t0 + 1h), Action::none);
  EXPECT_EQ(policy.on_rank_exit(1, ExitStatus::exited_with(0), t0), Verdict::success);
  EXPECT_TRUE(policy.finished());
  EXPECT_EQ(policy.exit_code(), 0);
  EXPECT_FALSE(policy.first_failed_rank());
}

TEST(FailurePolicy, FirstFailureStartsGraceThenTerminateThenKill) {
  FailurePolicy policy(3, timings());
  EXPECT_EQ(policy.on_rank_exit(1, ExitStatus::exited_with(3), t0), Verdict::failure);
  EXPECT_EQ(policy.next_deadline(), t0 + 5s);
  EXPECT_EQ(policy.due(t0 + 4s), Action::none);
  // During the grace period another rank reports its own failure; the first one still decides.
  EXPECT_EQ(policy.on_rank_exit(2, ExitStatus::killed_by(SIGSEGV), t0 + 1s), Verdict::failure);
  EXPECT_EQ(policy.due(t0 + 5s), Action::terminate);
  EXPECT_EQ(policy.due(t0 + 5s), Action::none);  // once
  EXPECT_EQ(policy.next_deadline(), t0 + 8s);
  EXPECT_EQ(policy.due(t0 + 8s), Action::kill);
  EXPECT_EQ(policy.due(t0 + 9s), Action::none);
  // What the signals caused is not a failure of its own.
  EXPECT_EQ(policy.on_rank_exit(0, ExitStatus::killed_by(SIGKILL), t0 + 8s), Verdict::stopped);
  EXPECT_TRUE(policy.finished());
  EXPECT_EQ(policy.exit_code(), 3);
  EXPECT_EQ(policy.first_failed_rank(), 1);
}

TEST(FailurePolicy, SignalDeathExitsWith128PlusSignal) {
  FailurePolicy policy(2, timings());
  policy.on_rank_exit(0, ExitStatus::killed_by(SIGKILL), t0);
  policy.on_rank_exit(1, ExitStatus::exited_with(1), t0 + 1s);
  EXPECT_EQ(policy.exit_code(), 137);
  EXPECT_EQ(policy.first_failed_rank(), 0);
}

TEST(FailurePolicy, OthersExitingDuringGraceEndsTheJobWithoutSignals) {
  FailurePolicy policy(2, timings());
  policy.on_rank_exit(0, ExitStatus::exited_with(2), t0);
  EXPECT_EQ(policy.on_rank_exit(1, ExitStatus::exited_with(0), t0 + 1s), Verdict::success);
  EXPECT_TRUE(policy.finished());
  EXPECT_EQ(policy.due(t0 + 10s), Action::none);
  EXPECT_EQ(policy.next_deadline(), std::nullopt);
  EXPECT_EQ(policy.exit_code(), 2);
}

TEST(FailurePolicy, ZeroGraceTerminatesAtOnce) {
  FailurePolicy policy(2, {0s, 3s, 500ms});
  policy.on_rank_exit(0, ExitStatus::exited_with(1), t0);
  EXPECT_EQ(policy.due(t0), Action::terminate);
}

TEST(FailurePolicy, InterruptIsForwardedThenKilledAndSecondInterruptKillsNow) {
  using Response = FailurePolicy::InterruptResponse;
  FailurePolicy policy(2, timings());
  EXPECT_EQ(policy.on_interrupt(SIGINT, t0), Response::forward);
  EXPECT_TRUE(policy.interrupted());
  EXPECT_EQ(policy.due(t0 + 1s), Action::none);  // no SIGTERM: the forwarded SIGINT replaces it
  EXPECT_EQ(policy.on_rank_exit(0, ExitStatus::killed_by(SIGINT), t0 + 1s), Verdict::stopped);
  EXPECT_EQ(policy.on_interrupt(SIGINT, t0 + 2s), Response::forward_and_kill);
  EXPECT_EQ(policy.due(t0 + 2s), Action::kill);
  policy.on_rank_exit(1, ExitStatus::killed_by(SIGKILL), t0 + 2s);
  EXPECT_EQ(policy.exit_code(), 128 + SIGINT);
}

TEST(FailurePolicy, TheSameInterruptArrivingTwiceAtOnceIsOneRequest) {
  using Response = FailurePolicy::InterruptResponse;
  FailurePolicy policy(1, timings());
  EXPECT_EQ(policy.on_interrupt(SIGTERM, t0), Response::forward);
  EXPECT_EQ(policy.on_interrupt(SIGTERM, t0 + 10ms), Response::ignore_duplicate);
  EXPECT_EQ(policy.due(t0 + 1s), Action::none);
  EXPECT_EQ(policy.due(t0 + 3s), Action::kill);
}

TEST(FailurePolicy, InterruptAloneEscalatesAfterKillDelay) {
  FailurePolicy policy(1, timings());
  policy.on_interrupt(SIGTERM, t0);
  EXPECT_EQ(policy.next_deadline(), t0 + 3s);
  EXPECT_EQ(policy.due(t0 + 3s), Action::kill);
  EXPECT_EQ(policy.exit_code(), 128 + SIGTERM);
}

TEST(FailurePolicy, FailureBeforeInterruptKeepsItsExitCode) {
  FailurePolicy policy(2, timings());
  policy.on_rank_exit(1, ExitStatus::exited_with(4), t0);
  policy.on_interrupt(SIGINT, t0 + 1s);
  EXPECT_EQ(policy.exit_code(), 4);
}

TEST(FailurePolicy, LaunchFailureStopsTheOthersAtOnce) {
  FailurePolicy policy(1, timings());
  policy.on_launch_failure(127, t0);
  EXPECT_EQ(policy.due(t0), Action::terminate);
  EXPECT_EQ(policy.on_rank_exit(0, ExitStatus::killed_by(SIGTERM), t0), Verdict::stopped);
  EXPECT_EQ(policy.exit_code(), 127);
}

}  // namespace
}  // namespace kolo::launcher
