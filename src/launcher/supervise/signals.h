// The launcher's signals as readable events: SIGCHLD (a rank exited), SIGINT and SIGTERM (to be
// forwarded to the ranks) are blocked and read from a signalfd in the supervisor's poll loop, so
// no handler and no global state is involved. Create it before any thread starts (the rendezvous
// server's thread must inherit the blocked mask, or it could take the signals instead). SIGPIPE
// is ignored while it lives: a closed stdout must not kill the launcher of a running job.
#pragma once

#include <signal.h>

#include <vector>

#include "launcher/spawn/pipe.h"

namespace kolo::launcher {

class SignalWatcher {
 public:
  // `extra`: more signals to watch the same way (the remote agent adds SIGHUP).
  explicit SignalWatcher(const std::vector<int>& extra = {});
  ~SignalWatcher();  // restores the previous mask and SIGPIPE disposition
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  [[nodiscard]] int fd() const { return fd_.fd(); }
  // The signals that arrived since the last call (without waiting), in arrival order.
  std::vector<int> read_pending();

 private:
  sigset_t previous_mask_{};
  struct sigaction previous_sigpipe_ {};
  UniqueFd fd_;
};

}  // namespace kolo::launcher
