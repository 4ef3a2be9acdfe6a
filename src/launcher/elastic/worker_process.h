// One worker process of an elastic job, as kolorun's elastic driver supervises it: its identity
// for the membership rules, how to reach it (pid, or the ssh agent's control channel), and what
// kolorun knows about it (reaped, removed with its host, member of the latest round, stuck); and
// how one is started.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>

#include "base/clock.h"
#include "launcher/cli/cli.h"
#include "launcher/elastic/job_services.h"
#include "launcher/elastic/rounds.h"
#include "launcher/spawn/exit_status.h"
#include "launcher/spawn/pipe.h"

namespace kolo::launcher {

struct ElasticWorkerProcess {
  ElasticWorker who;
  pid_t pid = -1;
  UniqueFd control;  // a remote worker's agent session; closing it kills the worker
  std::shared_ptr<std::optional<ExitStatus>> agent_report;  // the remote worker's real status
  std::optional<ExitStatus> status;                         // set once reaped
  bool removed = false;  // its host left the pool: no assignment from now on
  std::optional<Clock::time_point> dismissed_at;  // first round that left it out
  bool member = false;                            // in the latest published round
  int rank = -1;                                  // its rank there
  bool stuck = false;                             // killed by kolorun for not arriving at a reset
  bool hard_stopped = false;                      // kolorun ended its ssh session itself

  [[nodiscard]] bool running() const { return !status.has_value(); }
  [[nodiscard]] bool included() const { return running() && !removed; }

  // Delivers `signal`: through the agent for a remote worker (SIGKILL ends its session, which
  // kills it), else to the local process group.
  void send_signal(int signal);
};

// Starts worker `who` as rank `planned_rank` of `planned_size` (what its environment says until
// its first round, `first_round`, assigns it), through the job's spawners, its output into the
// job's multiplexer.
std::unique_ptr<ElasticWorkerProcess> start_elastic_worker(
    const ElasticWorker& who, int planned_rank, int planned_size, int64_t first_round,
    const LaunchOptions& options, const Environment& base_env, ElasticJobServices& services);

}  // namespace kolo::launcher
