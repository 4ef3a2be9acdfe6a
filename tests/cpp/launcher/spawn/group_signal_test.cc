#include "launcher/spawn/group_signal.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kolo::launcher {
namespace {

// A child in its own process group that waits for signals, stopped before we signal it.
pid_t start_stopped_child() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    for (;;) ::pause();
  }
  ::setpgid(pid, pid);  // both sides set it: no race with the signal below
  ::kill(pid, SIGSTOP);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, WUNTRACED), pid);
  EXPECT_TRUE(WIFSTOPPED(status));
  return pid;
}

TEST(GroupSignal, TerminateReachesAStoppedProcess) {
  const pid_t pid = start_stopped_child();
  ASSERT_TRUE(signal_group(pid, SIGTERM));
  int status = 0;
  // Without the SIGCONT this wait would block for ever: SIGTERM stays pending while stopped.
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST(GroupSignal, KillNeedsNoContinue) {
  const pid_t pid = start_stopped_child();
  ASSERT_TRUE(signal_group(pid, SIGKILL));
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

}  // namespace
}  // namespace kolo::launcher
