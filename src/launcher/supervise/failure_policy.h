// When to stop a job and what kolorun exits with, as a pure state machine (times passed in), so
// the rules are testable without processes. The rules:
//  - A rank exiting non-zero or by a signal is a failure. The first one starts a grace period
//    during which the other ranks may exit on their own (and their failures are reported too);
//    then the remaining ranks get SIGTERM, and SIGKILL `kill_after` later.
//  - An interrupt (SIGINT/SIGTERM to kolorun) is forwarded by the caller; ranks still running
//    `kill_after` later get SIGKILL. A second interrupt kills at once, unless it came within
//    `duplicate_window` of the first: wrappers such as timeout(1) signal both kolorun and its
//    process group, so one request can arrive twice, and that must not mean "kill now".
//  - Ranks that exit after kolorun began stopping the job are "stopped", not failures.
//  - Exit code: the first failure's (signal: 128 + number), else 128 + the interrupting signal,
//    else 0.
#pragma once

#include <optional>

#include "base/clock.h"
#include "launcher/spawn/exit_status.h"

namespace kolo::launcher {

class FailurePolicy {
 public:
  struct Timings {
    Duration grace = std::chrono::seconds(5);
    Duration kill_after = std::chrono::seconds(5);
    Duration duplicate_window = std::chrono::milliseconds(500);
  };
  enum class Verdict { success, failure, stopped };
  enum class Action { none, terminate, kill };
  enum class InterruptResponse { forward, forward_and_kill, ignore_duplicate };

  FailurePolicy(int ranks, Timings timings);

  // How to report this exit (see the rules above).
  Verdict on_rank_exit(int rank, ExitStatus status, Clock::time_point now);
  // A rank could not be started: stop the others without a grace period; exit with `exit_code`.
  void on_launch_failure(int exit_code, Clock::time_point now);
  InterruptResponse on_interrupt(int signal, Clock::time_point now);

  // The signal action that has come due (each is returned once), for the still-running ranks.
  Action due(Clock::time_point now);
  // When due() will next have something to do; nullopt when nothing is scheduled.
  [[nodiscard]] std::optional<Clock::time_point> next_deadline() const;

  [[nodiscard]] bool finished() const { return running_ == 0; }
  [[nodiscard]] bool interrupted() const { return interrupt_signal_.has_value(); }
  [[nodiscard]] bool stopping() const { return terminate_sent_ || interrupt_signal_.has_value(); }
  [[nodiscard]] int exit_code() const;
  [[nodiscard]] std::optional<int> first_failed_rank() const { return first_failed_rank_; }
  [[nodiscard]] std::optional<ExitStatus> first_failure() const { return first_failure_; }

 private:
  int running_;
  Timings timings_;
  std::optional<Clock::time_point> terminate_at_;
  std::optional<Clock::time_point> kill_at_;
  bool terminate_sent_ = false;
  bool kill_sent_ = false;
  std::optional<int> first_failed_rank_;
  std::optional<ExitStatus> first_failure_;
  std::optional<int> launch_failure_code_;
  std::optional<int> interrupt_signal_;
  Clock::time_point interrupted_at_{};
};

}  // namespace kolo::launcher
