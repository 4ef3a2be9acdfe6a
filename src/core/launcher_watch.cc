#include "core/launcher_watch.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>

namespace kolo::core {

void end_with_launcher(const EnvLookup& lookup) {
  const auto found = find_setting(lookup, "LAUNCHER_PID");
  if (!found) return;
  const std::string* text = &found->value;
  char* end = nullptr;
  const long launcher = std::strtol(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0' || launcher <= 1) return;
  // Only kolorun's own child: with a wrapper process in between, the signal would follow the
  // wrapper's death instead (kolorun stops the whole process group in the ordinary case anyway).
  if (::getppid() != static_cast<pid_t>(launcher)) return;
  // SIGTERM, not SIGKILL: a script may catch it to save a checkpoint; without a handler it ends.
  (void)::prctl(PR_SET_PDEATHSIG, SIGTERM);
  // kolorun may have died between the two checks: then the signal was never armed in time.
  if (::getppid() != static_cast<pid_t>(launcher)) ::raise(SIGTERM);
}

}  // namespace kolo::core
