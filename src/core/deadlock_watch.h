// The deadlock watch: when every rank has a caller blocked waiting for an operation and nothing
// has completed anywhere for the timeout (the peer timeout), the collectives still pending at the
// coordinator can never complete: each misses a rank that is itself blocked on another one (a
// rank took another branch, or ranks submit in different orders). They then fail on the ranks
// that submitted them, naming who did and who did not, instead of hanging. A rank that is merely
// late (computing, writing a checkpoint) is not blocked, so it never triggers this; the stall
// shutdown (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS) covers that case when asked for.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "base/clock.h"
#include "negotiation/coordinator.h"

namespace kolo::core {

class DeadlockWatch {
 public:
  explicit DeadlockWatch(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  // One loop iteration: `all_waiting`, agreed in the global cycle; `progressed`: some response
  // ran in this iteration. True once every rank has waited, with no progress, for the timeout
  // (the watch then starts over).
  bool observe(bool all_waiting, bool progressed, Clock::time_point now);

 private:
  std::chrono::milliseconds timeout_;
  std::optional<Clock::time_point> since_;
};

// The error a deadlocked pending tensor fails with.
std::string deadlock_message(const negotiation::PendingTensor& tensor,
                             std::chrono::milliseconds waited);

}  // namespace kolo::core
