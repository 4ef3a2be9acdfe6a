#include "launcher/supervise/supervisor.h"

#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>

#include "base/errors.h"
#include "launcher/spawn/agent_protocol.h"
#include "launcher/spawn/group_signal.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

namespace {

// How long to keep reading output after the last rank exited: a rank's children may still hold
// its pipes (and be printing); they get this long before their process group is killed.
constexpr auto kDrainTimeout = std::chrono::seconds(2);
// Upper bound on one poll, so a lost wake-up can never stall the loop for long.
constexpr int kMaxPollMs = 1000;

std::string rank_list(const std::vector<int>& ranks) {
  return fmt::format("{}", fmt::join(ranks, ", "));
}

}  // namespace

Supervisor::Supervisor(std::vector<RankProcess> ranks, FailurePolicy policy,
                       OutputMultiplexer& output, SignalWatcher& signals, const Logger& logger,
                       FailureNotice notice)
    : ranks_(std::move(ranks)),
      policy_(policy),
      output_(output),
      signals_(signals),
      logger_(logger),
      notice_(std::move(notice)) {}

int Supervisor::run() {
  std::vector<pollfd> fds;
  while (true) {
    reap_exited();
    end_stopped_ranks();
    apply(policy_.due(Clock::now()));
    if (policy_.finished()) break;

    fds.clear();
    fds.push_back(pollfd{signals_.fd(), POLLIN, 0});
    output_.append_pollfds(fds);
    int ready = ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (ready < 0 && errno != EINTR) throw SystemError("poll", errno, "kolorun supervisor");
    if (ready <= 0) continue;
    if (fds[0].revents != 0) handle_signals();
    for (size_t i = 1; i < fds.size(); ++i) output_.handle(fds[i]);
  }
  drain_output();
  const int code = policy_.exit_code();
  report_outcome(code);
  return code;
}

int Supervisor::poll_timeout_ms() const {
  auto deadline = policy_.next_deadline();
  if (!deadline) return kMaxPollMs;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
  // Round up so we do not wake a hair early and spin.
  return static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, kMaxPollMs));
}

void Supervisor::reap_exited() {
  for (auto& rank : ranks_) {
    if (rank.status) continue;
    int status = 0;
    pid_t pid = ::waitpid(rank.pid, &status, WNOHANG);
    if (pid == rank.pid) on_exit(rank, ExitStatus::from_wait_status(status));
    if (pid < 0 && errno == ECHILD) on_exit(rank, ExitStatus::exited_with(0));  // reaped elsewhere
  }
}

void Supervisor::end_stopped_ranks() {
  if (!stopped_watch_) return;
  const auto ended = std::count_if(ranks_.begin(), ranks_.end(),
                                   [](const RankProcess& r) { return r.status.has_value(); });
  const auto now = Clock::now();
  // While the job runs, a rank stopped now may be continued.
  if (ended == 0 || !stopped_watch_->time_to_look(now)) return;
  const std::set<pid_t> stopped = stopped_process_groups();
  for (auto& rank : ranks_) {
    if (rank.status) continue;
    if (rank.agent_report) {
      // Remote: this host cannot read the rank's /proc; its agent watches it the same way.
      if (!rank.stopped_watch_asked && rank.control.valid()) {
        const std::string request = agent_stopped_watch_request(stopped_watch_->allowance());
        rank.stopped_watch_asked = write_fully(rank.control.fd(), request.data(), request.size());
      }
      continue;
    }
    if (!stopped_watch_->overdue(rank.slot.rank, stopped.count(rank.pid) != 0, now)) continue;
    logger_.error(
        "rank {} (host {}) has been stopped (SIGSTOP) for more than {} s while {} other rank(s) "
        "had ended, and cannot finish; killing it",
        rank.slot.rank, rank.slot.host,
        format_seconds(std::chrono::duration<double>(stopped_watch_->allowance()).count()), ended);
    signal_group(rank.pid, SIGKILL);  // reaped as killed by SIGKILL: a failure, exit 137
  }
}

ExitStatus Supervisor::remote_outcome(const RankProcess& rank, ExitStatus ssh_status) {
  if (*rank.agent_report) return **rank.agent_report;
  // Killed on our own escalation: the agent kills the rank when its session ends; nothing to add.
  if (rank.hard_stopped) return ssh_status;
  logger_.error(
      "rank {} (host {}): the ssh session ended ({}) before kolorun's agent reported how "
      "the rank ended: connection lost, or the agent could not start (see ssh's "
      "message above)",
      rank.slot.rank, rank.slot.host, ssh_status.describe());
  return ssh_status;
}

void Supervisor::on_exit(RankProcess& rank, ExitStatus status) {
  // Its last output first, so the report follows the rank's own final words (a traceback), and
  // a remote rank's agent status line has been read.
  output_.drain_rank(rank.slot.rank);
  if (rank.agent_report) {
    status = remote_outcome(rank, status);
    rank.control.reset();
  }
  rank.status = status;
  const bool had_failure = policy_.first_failure().has_value();
  switch (policy_.on_rank_exit(rank.slot.rank, status, Clock::now())) {
    case FailurePolicy::Verdict::success:
      logger_.info("rank {} (host {}) exited with code 0", rank.slot.rank, rank.slot.host);
      break;
    case FailurePolicy::Verdict::stopped:
      logger_.info("rank {} (host {}) stopped: {}", rank.slot.rank, rank.slot.host,
                   status.describe());
      break;
    case FailurePolicy::Verdict::failure: {
      if (!had_failure && notice_) {
        notice_(
            fmt::format("rank {} (host {}) {}", rank.slot.rank, rank.slot.host, status.describe()));
      }
      const auto still_running = std::count_if(ranks_.begin(), ranks_.end(),
                                               [](const RankProcess& r) { return !r.status; });
      if (!had_failure && still_running > 0) {
        const auto grace = std::chrono::duration<double>(*policy_.next_deadline() - Clock::now());
        logger_.error(
            "rank {} (host {}) {}; the remaining {} rank(s) will be terminated in {} s "
            "unless they exit first",
            rank.slot.rank, rank.slot.host, status.describe(), still_running,
            format_seconds(std::max(0.0, std::round(grace.count() * 10) / 10)));
      } else {
        logger_.error("rank {} (host {}) {}", rank.slot.rank, rank.slot.host, status.describe());
      }
      break;
    }
  }
}

void Supervisor::handle_signals() {
  using Response = FailurePolicy::InterruptResponse;
  for (int signal : signals_.read_pending()) {
    if (signal == SIGCHLD) continue;  // reaping happens at the top of every loop
    const Response response = policy_.on_interrupt(signal, Clock::now());
    if (response == Response::ignore_duplicate) {
      logger_.info("received {} again at once: taken as the same request", signal_name(signal));
      continue;
    }
    const int count = signal_running(signal);
    logger_.warn("received {}: forwarded to {} running rank(s){}", signal_name(signal), count,
                 response == Response::forward_and_kill ? "; killing them now" : "");
  }
}

void Supervisor::apply(FailurePolicy::Action action) {
  if (action == FailurePolicy::Action::none) return;
  const int signal = action == FailurePolicy::Action::terminate ? SIGTERM : SIGKILL;
  std::vector<int> targets;
  for (const auto& rank : ranks_) {
    if (!rank.status) targets.push_back(rank.slot.rank);
  }
  if (targets.empty()) return;
  logger_.warn("sending {} to the remaining rank(s): {}", signal_name(signal), rank_list(targets));
  signal_running(signal);
}

bool Supervisor::signal_rank(RankProcess& rank, int signal) {
  if (rank.control.valid()) {
    if (signal == SIGKILL) {
      // Ending the ssh session is the hard stop: the agent kills the rank at end-of-file.
      rank.control.reset();
      rank.hard_stopped = true;
    } else {
      const std::string request = agent_signal_request(signal);
      if (write_fully(rank.control.fd(), request.data(), request.size())) return true;
    }
  }
  // The whole group: the rank's own children (a shell's command, data loader workers) too.
  // A stopped rank (SIGSTOP) gets the signal too: SIGCONT follows it.
  return signal_group(rank.pid, signal);
}

int Supervisor::signal_running(int signal) {
  int count = 0;
  for (auto& rank : ranks_) {
    if (!rank.status && signal_rank(rank, signal)) ++count;
  }
  return count;
}

void Supervisor::drain_output() {
  const Deadline deadline(kDrainTimeout);
  while (!output_.all_closed() && !deadline.expired()) {
    output_.pump(deadline.remaining_ms(100));
  }
  for (const auto& rank : ranks_) {
    if (output_.rank_open(rank.slot.rank)) {
      logger_.info(
          "rank {}: processes left behind still hold its output open; killing its "
          "process group",
          rank.slot.rank);
      ::kill(-rank.pid, SIGKILL);
    }
  }
  output_.close_all();
}

void Supervisor::report_outcome(int exit_code) const {
  if (auto rank = policy_.first_failed_rank()) {
    const auto& failed = *std::find_if(ranks_.begin(), ranks_.end(),
                                       [&](const RankProcess& r) { return r.slot.rank == *rank; });
    logger_.error(
        "job failed: the first rank to fail was rank {} on host {}, which {}; kolorun "
        "exits with status {}",
        failed.slot.rank, failed.slot.host, policy_.first_failure()->describe(), exit_code);
  } else if (exit_code != 0) {
    logger_.warn("job stopped; kolorun exits with status {}", exit_code);
  } else {
    logger_.info("all {} rank(s) exited with code 0", ranks_.size());
  }
}

}  // namespace kolo::launcher
