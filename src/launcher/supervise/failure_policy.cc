#include "launcher/supervise/failure_policy.h"

#include <algorithm>

namespace kolo::launcher {

FailurePolicy::FailurePolicy(int ranks, Timings timings) : running_(ranks), timings_(timings) {}

FailurePolicy::Verdict FailurePolicy::on_rank_exit(int rank, ExitStatus status,
                                                   Clock::time_point now) {
  if (running_ > 0) --running_;
  if (status.success()) return Verdict::success;
  if (stopping()) return Verdict::stopped;
  if (!first_failure_ && !launch_failure_code_) {
    first_failure_ = status;
    first_failed_rank_ = rank;
    terminate_at_ = now + timings_.grace;
  }
  return Verdict::failure;
}

void FailurePolicy::on_launch_failure(int exit_code, Clock::time_point now) {
  if (!first_failure_ && !launch_failure_code_) launch_failure_code_ = exit_code;
  if (!terminate_sent_) terminate_at_ = now;
}

FailurePolicy::InterruptResponse FailurePolicy::on_interrupt(int signal, Clock::time_point now) {
  if (interrupt_signal_) {
    if (now - interrupted_at_ < timings_.duplicate_window) {
      return InterruptResponse::ignore_duplicate;
    }
    kill_at_ = now;  // asked again: the user does not want to wait
    return InterruptResponse::forward_and_kill;
  }
  interrupt_signal_ = signal;
  interrupted_at_ = now;
  terminate_at_.reset();  // the forwarded signal takes the place of SIGTERM
  if (!kill_at_) kill_at_ = now + timings_.kill_after;
  return InterruptResponse::forward;
}

FailurePolicy::Action FailurePolicy::due(Clock::time_point now) {
  if (finished()) return Action::none;
  if (kill_at_ && !kill_sent_ && now >= *kill_at_) {
    kill_sent_ = true;
    return Action::kill;
  }
  if (terminate_at_ && !terminate_sent_ && !interrupt_signal_ && now >= *terminate_at_) {
    terminate_sent_ = true;
    kill_at_ = now + timings_.kill_after;
    return Action::terminate;
  }
  return Action::none;
}

std::optional<Clock::time_point> FailurePolicy::next_deadline() const {
  if (finished()) return std::nullopt;
  std::optional<Clock::time_point> next;
  if (kill_at_ && !kill_sent_) next = *kill_at_;
  if (terminate_at_ && !terminate_sent_ && !interrupt_signal_) {
    next = next ? std::min(*next, *terminate_at_) : *terminate_at_;
  }
  return next;
}

int FailurePolicy::exit_code() const {
  if (first_failure_) return first_failure_->shell_code();
  if (launch_failure_code_) return *launch_failure_code_;
  if (interrupt_signal_) return 128 + *interrupt_signal_;
  return 0;
}

}  // namespace kolo::launcher
