// A rank started by kolorun on its own host ends when kolorun ends, even when kolorun is killed
// with SIGKILL and cannot stop it: the kernel sends the rank SIGTERM when its parent dies
// (PR_SET_PDEATHSIG). Remote ranks need none of this: kolorun's agent on their host stops them
// when the ssh session ends.
#pragma once

#include "core/config.h"

namespace kolo::core {

// kolorun puts its pid in KOLO_LAUNCHER_PID. When this process is kolorun's direct child, arms
// the parent-death signal; if kolorun is already gone, terminates now. Idempotent; no-op when not
// started by a local kolorun (a shell wrapper in between, mpirun, a remote host).
void end_with_launcher(const EnvLookup& lookup);

}  // namespace kolo::core
