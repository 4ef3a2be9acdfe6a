#include "launcher/elastic/driver.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "base/errors.h"
#include "launcher/elastic/elastic_driver.h"
#include "launcher/elastic/exit_policy.h"
#include "launcher/elastic/host_pool.h"
#include "launcher/elastic/job_services.h"
#include "launcher/elastic/store.h"
#include "launcher/elastic/worker_process.h"
#include "launcher/spawn/env_forwarding.h"
#include "launcher/spawn/spawner.h"
#include "launcher/supervise/output.h"
#include "launcher/supervise/signals.h"
#include "launcher/supervise/stopped_rank_watch.h"
#include "transport/shm/job_names.h"

namespace kolo::launcher {

namespace {

constexpr int kPollMs = 100;
// After SIGTERM (job ending, or an interrupt), how long workers get before SIGKILL.
constexpr auto kStopGrace = std::chrono::seconds(5);
// A worker of a removed host exits 0 on its own once a round leaves it out; past this long after
// that round it is killed (not counted as a failure).
constexpr auto kRemovedGrace = std::chrono::seconds(10);
// A second interrupt this soon after the first is the same request (see failure_policy.h).
constexpr auto kDuplicateWindow = std::chrono::milliseconds(500);

Duration seconds(double value) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(value));
}

// "was killed by signal SIGKILL (9)" reads better in "lost (killed by ...)".
std::string without_was(std::string text) {
  if (text.rfind("was ", 0) == 0) text.erase(0, 4);
  return text;
}

// The environment every worker starts from: kolorun's own, with -x/--env options applied.
Environment with_forwarded(const LaunchOptions& options, Environment inherited) {
  apply_env_options(options.forwarded_env, inherited);
  return inherited;
}

}  // namespace

ElasticDriver::ElasticDriver(const LaunchOptions& options, const Environment& inherited,
                             const Logger& logger)
    : options_(options),
      logger_(logger),
      base_env_(with_forwarded(options, inherited)),
      peer_timeout_(seconds(rank_peer_timeout_seconds(base_env_))),
      pool_(options, base_env_) {}

void ElasticDriver::on_exit(Worker& worker, ExitStatus status) {
  output_->drain_rank(worker.who.serial);
  if (worker.agent_report) {
    if (*worker.agent_report) status = **worker.agent_report;
    worker.control.reset();
  }
  worker.status = status;
  const auto now = Clock::now();
  const std::string where = worker.member
                                ? fmt::format("rank {} on host {}", worker.rank, worker.who.host)
                                : fmt::format("worker {}", worker.who.id());
  const ElasticExitFacts facts{status.success(),
                               worker.member,
                               worker.removed,
                               worker.dismissed_at.has_value(),
                               kill_at_.has_value(),
                               finishing_ || failure_code_.has_value(),
                               std::any_of(workers_.begin(), workers_.end(), [&](const auto& w) {
                                 return w->included() && w->member &&
                                        w->who.host != worker.who.host;
                               })};
  const ElasticExitAction action = elastic_exit_action(facts);
  switch (action) {
    case ElasticExitAction::job_finishes:
      finishing_ = true;
      dismiss_newcomers(now);
      [[fallthrough]];
    case ElasticExitAction::left_normally:
      logger_.info("{} exited with code 0", where);
      return;
    case ElasticExitAction::logged_while_stopping:
      logger_.info("{} stopped: {}", where, status.describe());
      return;
    case ElasticExitAction::failure_while_ending:
      if (!failure_code_) failure_code_ = status.shell_code();
      logger_.error("{} {}", where, status.describe());
      return;
    case ElasticExitAction::dismissed_ended:
      return;
    case ElasticExitAction::newcomer_failed:
    case ElasticExitAction::member_lost:
    case ElasticExitAction::no_survivor:
      break;
  }
  // Horovod's rule: the failed worker's host leaves the job whole; its other workers get no
  // assignment in the next round and exit 0.
  pool_.blacklist().add(worker.who.host, now);
  const int dropped = drop_workers_of(worker.who.host);
  const std::string how =
      worker.stuck
          ? fmt::format("stuck: no reset within {} s, killed",
                        format_seconds(std::chrono::duration<double>(peer_timeout_).count() + 1))
          : without_was(status.describe());
  if (action == ElasticExitAction::newcomer_failed) {
    // The running members need no reset for a worker that never joined them.
    say(fmt::format("new {} failed before joining a round ({}); host {} blacklisted", where, how,
                    worker.who.host));
    if (fill_slots(now, false) > 0) pending_change_.insert("added");
    if (dropped > 0) pending_change_.insert("removed");
    return;
  }
  // Where this round's survivors look for the cause while they report their failed collective.
  store_->report_lost_member(
      round_, fmt::format("rank {} (host {}) {}", worker.rank, worker.who.host, how));
  fill_slots(now, true);
  if (action == ElasticExitAction::no_survivor) {
    // No survivor holds the committed state and no worker can come to a reset: waiting for
    // --elastic-timeout would only delay the failure.
    stop_all(fmt::format("{} lost ({}); no worker is left (host {} and the others blacklisted or "
                         "gone): the job fails",
                         where, how, worker.who.host),
             status.shell_code() != 0 ? status.shell_code() : 1);
    return;
  }
  const int remaining = included_count();
  say(fmt::format("{} lost ({}); continuing with {} ranks from commit {}", where, how, remaining,
                  store_->last_commit()));
  if (remaining >= options_.min_np) publish_round(fmt::format("{} lost", where));
}

void ElasticDriver::announce_host_changes() {
  if (pending_change_.empty() || round_ == 0) return;
  // The workers' check_host_updates() reads this key at their next commit.
  const std::string kind = pending_change_.size() > 1 ? "mixed" : *pending_change_.begin();
  store_->announce_hosts_updated(++hosts_stamp_, kind);
  if (kind != "removed")
    say(fmt::format("growing to {} ranks at the next commit", included_count()));
  pending_change_.clear();
}

void ElasticDriver::reap() {
  for (auto& worker : workers_) {
    if (!worker->running()) continue;
    int status = 0;
    const pid_t pid = ::waitpid(worker->pid, &status, WNOHANG);
    if (pid == worker->pid) on_exit(*worker, ExitStatus::from_wait_status(status));
    if (pid < 0 && errno == ECHILD) on_exit(*worker, ExitStatus::exited_with(0));
  }
}

void ElasticDriver::check_ready(Clock::time_point now) {
  if (round_ == 0 || finishing_ || failure_code_ || kill_at_) return;
  if (store_->ready_count(round_ + 1) <= 0) return;  // nobody asked for the next round
  bool member_ready = false;
  std::vector<Worker*> waiting;
  for (auto& worker : workers_) {
    if (!worker->included()) continue;
    const bool ready = store_->is_ready(round_ + 1, worker->who.id());
    if (ready && worker->member) member_ready = true;
    if (!ready) waiting.push_back(worker.get());
  }
  if (!member_ready) return;  // new workers wait until the members come to a reset
  if (!reset_started_) reset_started_ = now;
  if (waiting.empty()) {
    if (included_count() >= options_.min_np) publish_round("every worker ready");
    return;
  }
  // A member that does not come to the reset within the peer timeout is stuck (SIGSTOP). A new
  // worker may still be starting (Python importing torch takes seconds on a loaded machine): it
  // gets the start timeout.
  const Duration member_limit = peer_timeout_ + std::chrono::seconds(1);
  const Duration newcomer_limit = std::max(member_limit, seconds(options_.start_timeout_seconds));
  for (Worker* worker : waiting) {
    if (worker->stuck) continue;
    if (now - *reset_started_ < (worker->member ? member_limit : newcomer_limit)) continue;
    worker->stuck = true;
    logger_.warn("worker {} did not arrive at the reset; killing it (SIGKILL)", worker->who.id());
    worker->send_signal(SIGKILL);
  }
}

void ElasticDriver::dismiss_removed(Clock::time_point now) {
  for (auto& worker : workers_) {
    if (worker->running() && worker->dismissed_at && !worker->hard_stopped &&
        now - *worker->dismissed_at > peer_timeout_ + kRemovedGrace) {
      logger_.warn("worker {} left the job but did not exit; killing it", worker->who.id());
      worker->send_signal(SIGKILL);
    }
  }
}

void ElasticDriver::dismiss_newcomers(Clock::time_point now) {
  for (auto& worker : workers_) {
    if (!worker->included() || worker->member) continue;
    logger_.info("worker {} had not joined a round when the job finished; stopping it",
                 worker->who.id());
    worker->removed = true;
    worker->dismissed_at = now;
    worker->send_signal(SIGTERM);
  }
}

void ElasticDriver::stop_all(const std::string& why, int code, int signal) {
  if (kill_at_) return;
  if (!failure_code_) failure_code_ = code;
  if (!why.empty()) say(why);
  for (auto& worker : workers_) {
    if (worker->running()) worker->send_signal(signal);
  }
  stopping_since_ = Clock::now();
  kill_at_ = *stopping_since_ + kStopGrace;
}

void ElasticDriver::handle_signals() {
  for (int signal : signals_->read_pending()) {
    if (signal == SIGCHLD) continue;
    if (kill_at_) {
      // Wrappers such as timeout(1) signal kolorun and its group: one request may come twice.
      if (Clock::now() - *stopping_since_ < kDuplicateWindow) continue;
      logger_.warn("received {} again: killing the workers now", signal_name(signal));
      for (auto& worker : workers_) {
        if (worker->running()) worker->send_signal(SIGKILL);
      }
      continue;
    }
    logger_.warn("received {}: forwarded to the workers", signal_name(signal));
    stop_all("", 128 + signal, signal);
  }
}

std::vector<int> ElasticDriver::running_pids() const {
  std::vector<int> pids;
  for (const auto& worker : workers_) {
    if (worker->running()) pids.push_back(worker->pid);
  }
  return pids;
}

int ElasticDriver::run() {
  signals_ = std::make_unique<SignalWatcher>();
  services_ = start_elastic_job_services(options_, pool_.hosts(), logger_);
  store_ = std::make_unique<ElasticStore>(*services_.store);
  output_ = services_.output.get();
  MinSizeWatch min_size(options_.min_np, seconds(options_.elastic_timeout_seconds));

  fill_slots(Clock::now(), true);
  std::vector<pollfd> fds;
  while (true) {
    reap();
    const auto now = Clock::now();
    if (running_pids().empty() && (finishing_ || failure_code_ || kill_at_)) break;
    if (!finishing_ && !failure_code_ && !kill_at_) {
      const bool changed = refresh_pool(now);
      const bool added = fill_slots(now, changed || reset_started_.has_value()) > 0 && round_ > 0;
      if (added) pending_change_.insert("added");
      if (round_ == 0 && included_count() >= options_.min_np) publish_round("start");
      check_ready(now);
      announce_host_changes();
      dismiss_removed(now);
      ElasticCensus census{included_count(),
                           usable_slots(now),
                           pool_.slots_can_come_back(),
                           resets_,
                           MinSizeWatch::Verdict::enough,
                           pool_.describe(),
                           pool_.blacklist().blocked_hosts(now)};
      census.min_size = min_size.update(census.available, now);
      const auto why = elastic_end_reason(
          census, {options_.min_np, options_.elastic_timeout_seconds, options_.reset_limit});
      if (why) stop_all(*why, 1);
    }
    if (kill_at_ && now >= *kill_at_) {
      for (auto& worker : workers_) {
        if (worker->running() && !worker->hard_stopped) worker->send_signal(SIGKILL);
      }
    }
    fds.clear();
    fds.push_back(pollfd{signals_->fd(), POLLIN, 0});
    output_->append_pollfds(fds);
    const int ready = ::poll(fds.data(), fds.size(), kPollMs);
    if (ready < 0 && errno != EINTR) throw SystemError("poll", errno, "kolorun elastic driver");
    if (ready <= 0) continue;
    if (fds[0].revents != 0) handle_signals();
    for (size_t i = 1; i < fds.size(); ++i) output_->handle(fds[i]);
  }
  const Deadline drain(std::chrono::seconds(2));
  while (!output_->all_closed() && !drain.expired()) output_->pump(drain.remaining_ms(100));
  output_->close_all();
  (void)transport::shm::remove_job_leftovers(transport::shm::job_tag(services_.job.secret_hex));
  if (failure_code_) {
    logger_.error("elastic job failed; kolorun exits with status {}", *failure_code_);
    return *failure_code_;
  }
  logger_.info("every worker of round {} exited with code 0", round_);
  return 0;
}

int run_elastic_job(const LaunchOptions& options, const Environment& inherited,
                    const Logger& logger) {
  ElasticDriver driver(options, inherited, logger);
  return driver.run();
}

}  // namespace kolo::launcher
