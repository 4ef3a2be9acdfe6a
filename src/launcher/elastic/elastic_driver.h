// Internal to the elastic driver's files (driver.cc: the loop, exits, rounds' readiness, signals;
// driver_slots.cc: which workers run where, and the rounds published for them): the driver's state.
// Not for other rooms: they start a job with run_elastic_job (driver.h).
#pragma once

#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/logger.h"
#include "launcher/cli/cli.h"
#include "launcher/elastic/host_pool.h"
#include "launcher/elastic/job_services.h"
#include "launcher/elastic/store.h"
#include "launcher/elastic/worker_process.h"
#include "launcher/spawn/rank_environment.h"
#include "launcher/supervise/output.h"
#include "launcher/supervise/signals.h"

namespace kolo::launcher {

class ElasticDriver {
 public:
  using Worker = ElasticWorkerProcess;

  ElasticDriver(const LaunchOptions& options, const Environment& inherited, const Logger& logger);

  int run();

 private:
  void say(const std::string& line) const {
    std::fprintf(stderr, "[kolorun] elastic: %s\n", line.c_str());
    std::fflush(stderr);
  }
  // Asks discovery when due; whether hosts or slots came or went.
  bool refresh_pool(Clock::time_point now);
  // Starts workers on free slots; `changing`: the membership changes anyway, so hosts whose
  // blacklist cooldown ended are usable again (alone, their return interrupts nobody).
  int fill_slots(Clock::time_point now, bool changing);
  // The job finishes: workers that never joined a round are told to go (SIGTERM).
  void dismiss_newcomers(Clock::time_point now);
  void spawn(const std::string& host, int slot, int planned_rank, int planned_size);
  void reap();
  void on_exit(Worker& worker, ExitStatus status);
  void publish_round(const std::string& why);
  void check_ready(Clock::time_point now);
  // Tells the members about added/removed hosts (they reset at their next commit).
  void announce_host_changes();
  void handle_signals();
  // Ends the job: `signal` to every worker, SIGKILL kStopGrace later; kolorun exits with `code`.
  void stop_all(const std::string& why, int code, int signal = SIGTERM);
  void dismiss_removed(Clock::time_point now);
  // Marks every included worker of `host` removed (they leave at the next round); how many.
  int drop_workers_of(const std::string& host);
  [[nodiscard]] int included_count() const;
  [[nodiscard]] int usable_slots(Clock::time_point now) const;
  [[nodiscard]] std::vector<int> running_pids() const;

  const LaunchOptions& options_;
  const Logger& logger_;
  Environment base_env_;
  Duration peer_timeout_{};
  ElasticHostPool pool_;
  ElasticJobServices services_;
  // Shorthands into services_, set once they are started.
  std::unique_ptr<ElasticStore> store_;
  OutputMultiplexer* output_ = nullptr;
  std::unique_ptr<SignalWatcher> signals_;
  std::vector<std::unique_ptr<Worker>> workers_;
  int next_serial_ = 0;
  int64_t round_ = 0;  // latest published round
  int resets_ = 0;
  int64_t hosts_stamp_ = 0;
  std::set<std::string> pending_change_;  // "added" / "removed" not yet told to the workers
  std::optional<Clock::time_point> reset_started_;  // a member asked for round_ + 1
  bool finishing_ = false;           // a member exited 0: the job is ending, no more rounds
  std::optional<int> failure_code_;  // the job ends in failure with this code
  std::optional<Clock::time_point> kill_at_;
  std::optional<Clock::time_point> stopping_since_;
};

}  // namespace kolo::launcher
