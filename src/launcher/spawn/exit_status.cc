#include "launcher/spawn/exit_status.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstring>

namespace kolo::launcher {

ExitStatus ExitStatus::from_wait_status(int status) {
  if (WIFSIGNALED(status)) return killed_by(WTERMSIG(status));
  return exited_with(WEXITSTATUS(status));
}

std::string ExitStatus::describe() const {
  if (kind == Kind::exited) return fmt::format("exited with code {}", value);
  return fmt::format("was killed by signal {} ({})", signal_name(value), value);
}

std::string signal_name(int signal) {
  // sigabbrev_np (glibc 2.32) gives "KILL" without allocating or depending on the locale.
  if (const char* abbreviation = ::sigabbrev_np(signal); abbreviation != nullptr) {
    return std::string("SIG") + abbreviation;
  }
  return fmt::format("signal {}", signal);
}

}  // namespace kolo::launcher
