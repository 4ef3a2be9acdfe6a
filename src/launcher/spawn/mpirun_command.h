// `kolorun --mpi`: the job is launched by Open MPI's mpirun instead of kolorun's own spawner, as
// `horovodrun --mpi` does. The ranks then find each other over MPI (bootstrap/mpi_bootstrap.h) and
// run their collectives on MPI (KOLO_CPU_OPERATIONS=mpi). This file only builds the command line
// and its environment, so both can be checked without starting anything.
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/cli.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

struct MpirunContext {
  std::string mpirun = "mpirun";  // program to run (looked up on PATH when not a path)
  bool running_as_root = false;   // Open MPI refuses root without --allow-run-as-root
};

// mpirun's environment: the launcher's own, plus the backend choice (KOLO_/HOROVOD_CPU_OPERATIONS=
// mpi), kolorun's start timeout, log level and tuning flags, and PYTHONUNBUFFERED (kept if set).
Environment mpirun_environment(const LaunchOptions& options, const Environment& inherited);

// The full argv: mpirun [--allow-run-as-root] --tag-output -np N -H hosts|--hostfile FILE
// -bind-to none -map-by slot (or --binding-args) -mca pml ob1 -mca btl ^openib [translated options]
// -x NAME... [--mpi-args words] COMMAND... Every variable of `environment` that is safe to pass
// is forwarded by -x (remote hosts get the launcher's environment, as with horovodrun).
std::vector<std::string> mpirun_command(const LaunchOptions& options,
                                        const Environment& environment,
                                        const MpirunContext& context);

// Splits --mpi-args as a POSIX shell would split words: blanks separate, quotes ('...', "...")
// and backslashes protect. Throws InvalidArgument for an unterminated quote.
std::vector<std::string> split_shell_words(const std::string& text);

}  // namespace kolo::launcher
