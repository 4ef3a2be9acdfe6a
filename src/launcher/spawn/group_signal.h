// Signalling a rank's process group so that the signal is acted on even when the rank is stopped
// (SIGSTOP, SIGTSTP, a debugger): a stopped process keeps SIGTERM pending until it is continued,
// so a polite stop request alone would wait for the SIGKILL escalation. Shells do the same when
// they kill a stopped job.
#pragma once

#include <sys/types.h>

namespace kolo::launcher {

// Sends `signal` to the process group `group` (or, if that fails, to the process `group`); for
// any signal but SIGKILL and SIGCONT, SIGCONT follows so a stopped member receives it now.
// Returns whether the first signal was delivered.
bool signal_group(pid_t group, int signal);

}  // namespace kolo::launcher
