// Runs a started job to its end: one poll loop over the ranks' output pipes and the signal fd,
// reaping ranks as they exit, reporting failures (which rank, which host, how), applying the
// FailurePolicy's SIGTERM/SIGKILL escalation to the ranks' process groups, and forwarding SIGINT
// and SIGTERM. Returns kolorun's exit code.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/logger.h"
#include "launcher/hosts/hosts.h"
#include "launcher/spawn/exit_status.h"
#include "launcher/supervise/failure_policy.h"
#include "launcher/supervise/output.h"
#include "launcher/supervise/signals.h"
#include "launcher/supervise/stopped_rank_watch.h"

namespace kolo::launcher {

struct RankProcess {
  SlotAssignment slot;
  pid_t pid = -1;  // leader of the rank's own process group (for a remote rank: its ssh)
  std::optional<ExitStatus> status;  // set once reaped
  // Remote ranks only: the agent's control channel, and how the agent said the rank ended (filled
  // from its status line by the output filter; empty if the ssh session ended without one).
  UniqueFd control;
  std::shared_ptr<std::optional<ExitStatus>> agent_report;
  bool hard_stopped = false;         // kolorun ended its ssh session itself (SIGKILL escalation)
  bool stopped_watch_asked = false;  // its agent was told to end it should it stay stopped
};

// Told once, with a sentence such as "rank 2 (host a) was killed by signal SIGKILL (9)", when
// the first rank fails: the job publishes it so surviving ranks can name the root cause.
using FailureNotice = std::function<void(const std::string& what)>;

class Supervisor {
 public:
  Supervisor(std::vector<RankProcess> ranks, FailurePolicy policy, OutputMultiplexer& output,
             SignalWatcher& signals, const Logger& logger, FailureNotice notice = {});

  int run();
  // Once some rank has ended, end a local rank left stopped for longer than `allowance`
  // (stopped_rank_watch.h); off unless called.
  void watch_for_stopped_ranks(Duration allowance) { stopped_watch_.emplace(allowance); }

 private:
  void reap_exited();
  void end_stopped_ranks();
  void on_exit(RankProcess& rank, ExitStatus status);
  void handle_signals();
  void apply(FailurePolicy::Action action);
  // Sends `signal` to the process group of every rank not yet reaped; returns how many.
  int signal_running(int signal);
  // One rank: its process group, or for a remote rank a request to its agent.
  bool signal_rank(RankProcess& rank, int signal);
  // A remote rank's end as its agent reported it (or the ssh session's, explained).
  ExitStatus remote_outcome(const RankProcess& rank, ExitStatus ssh_status);
  void drain_output();
  void report_outcome(int exit_code) const;
  int poll_timeout_ms() const;

  std::vector<RankProcess> ranks_;
  FailurePolicy policy_;
  OutputMultiplexer& output_;
  SignalWatcher& signals_;
  const Logger& logger_;
  FailureNotice notice_;
  std::optional<StoppedRankWatch> stopped_watch_;
};

}  // namespace kolo::launcher
