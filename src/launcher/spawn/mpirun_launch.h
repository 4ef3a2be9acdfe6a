// Runs `kolorun --mpi`: replaces kolorun by mpirun (mpirun_command.h), whose exit status becomes
// kolorun's. mpirun is the program named by KOLO_MPIRUN, else `mpirun` on PATH.
#pragma once

#include "base/logger.h"
#include "launcher/cli/cli.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

// Returns only when mpirun cannot be started (throws Error saying what to install).
[[noreturn]] void exec_mpirun(const LaunchOptions& options, const Environment& inherited,
                              const Logger& logger);

}  // namespace kolo::launcher
