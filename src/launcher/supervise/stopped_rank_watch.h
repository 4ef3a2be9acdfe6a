// A rank left stopped (SIGSTOP, SIGTSTP) after the rest of its job ended keeps kolorun waiting
// forever: nothing fails, so no grace period starts, and the stopped rank never exits. Once some
// rank has ended, kolorun watches the others; one whose process group has a stopped process
// ('T' in /proc/PID/stat) without a break for longer than the allowance (the peer timeout plus
// the failure grace: what the other ranks had to notice it themselves) is reported and ended.
// A rank that is merely slow (a checkpoint written after the others left) or held by a debugger
// (state 't') is never touched.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>

#include "base/clock.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

class StoppedRankWatch {
 public:
  explicit StoppedRankWatch(Duration allowance) : allowance_(allowance) {}

  // One observation of `rank`: whether it is stopped now. True once, when it has been stopped
  // since its first stopped observation for longer than the allowance.
  bool overdue(int rank, bool stopped_now, Clock::time_point now);
  [[nodiscard]] Duration allowance() const { return allowance_; }
  // Whether to read /proc now: at most once a second, however busy the supervisor's loop is
  // (every output line wakes it).
  bool time_to_look(Clock::time_point now);

 private:
  Duration allowance_;
  std::map<int, Clock::time_point> stopped_since_;
  std::set<int> reported_;
  std::optional<Clock::time_point> last_look_;
};

// The peer timeout the ranks run with, in seconds, as kolo's config reads it from `rank_env`:
// KOLO_PEER_TIMEOUT, else HOROVOD_PEER_TIMEOUT (base/env's one settings table), else 30; a value
// that is not a positive number counts as unset (the ranks refuse it themselves, naming it).
double rank_peer_timeout_seconds(const Environment& rank_env);

// rank_peer_timeout_seconds() plus kolorun's failure grace.
Duration stopped_rank_allowance(const Environment& rank_env, double grace_seconds);

// The process groups (local ranks are each the leader of one) with a member stopped now, read
// from /proc; empty where /proc cannot be read.
std::set<pid_t> stopped_process_groups();

}  // namespace kolo::launcher
