// A rank started by kolorun on its own host ends when kolorun ends, even when kolorun is killed
// with SIGKILL and cannot stop it: the kernel sends the rank SIGTERM when its parent dies
// (PR_SET_PDEATHSIG); a rank below a wrapper (`kolorun sh -c '...'`) watches kolorun itself and
// ends its process group. Remote ranks need none of this: kolorun's agent on their host stops
// them when the ssh session ends.
#pragma once

#include <sys/types.h>

#include <optional>

#include "core/config.h"

namespace kolo::core {

// kolorun puts its pid in KOLO_LAUNCHER_PID. When this process is kolorun's direct child, arms
// the parent-death signal; if kolorun is already gone, terminates now. When it is further down a
// rank's process group (a wrapper in between), starts a thread that sends the group SIGTERM
// once kolorun ends. Idempotent; no-op when not started by a local kolorun (mpirun, a remote
// host).
void end_with_launcher(const EnvLookup& lookup);

// kolorun's pid when it runs on this host and started this process (directly, or as the parent
// of this rank's process group leader, below a wrapper); nullopt otherwise.
std::optional<pid_t> local_launcher(const EnvLookup& lookup);

}  // namespace kolo::core
