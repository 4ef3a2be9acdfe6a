// Which variables reach the ranks. Local ranks inherit kolorun's whole environment; remote ranks
// start from their host's login environment plus what kolorun forwards: every KOLO_* and
// HOROVOD_* variable (the job's own and the user's tuning), PYTHONUNBUFFERED, PATH, PYTHONPATH,
// LD_LIBRARY_PATH, and the names given with -x (mpirun's option). -x NAME=VALUE sets the value
// for every rank, local or remote.
#pragma once

#include <string>
#include <vector>

#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

// Applies -x NAME=VALUE entries to `env` (every rank's base environment). Throws InvalidArgument
// for -x NAME when NAME is not set in `env`: forwarding nothing would hide the mistake.
void apply_env_options(const std::vector<std::string>& env_options, Environment& env);

// The part of a rank's full environment sent to a remote host.
Environment remote_rank_environment(const Environment& rank_env,
                                    const std::vector<std::string>& env_options);

}  // namespace kolo::launcher
