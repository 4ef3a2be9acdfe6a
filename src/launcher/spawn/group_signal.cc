#include "launcher/spawn/group_signal.h"

#include <signal.h>

namespace kolo::launcher {

bool signal_group(pid_t group, int signal) {
  const bool as_group = ::kill(-group, signal) == 0;
  const bool delivered = as_group || ::kill(group, signal) == 0;
  if (delivered && signal != SIGKILL && signal != SIGCONT) {
    // The pending signal is handled (or kills) as soon as the process runs again.
    (void)::kill(as_group ? -group : group, SIGCONT);
  }
  return delivered;
}

}  // namespace kolo::launcher
