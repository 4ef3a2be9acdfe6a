#include "launcher/spawn/mpirun_launch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/env.h"
#include "base/errors.h"
#include "launcher/spawn/mpirun_command.h"

namespace kolo::launcher {

void exec_mpirun(const LaunchOptions& options, const Environment& inherited, const Logger& logger) {
  MpirunContext context;
  if (auto chosen = find_setting(lookup_in(inherited), "MPIRUN")) context.mpirun = chosen->value;
  context.running_as_root = ::geteuid() == 0;
  const Environment environment = mpirun_environment(options, inherited);
  const std::vector<std::string> argv = mpirun_command(options, environment, context);
  logger.info("running {}", fmt::join(argv, " "));

  std::vector<std::string> envp = to_envp_strings(environment);
  std::vector<char*> argv_pointers;
  std::vector<char*> envp_pointers;
  argv_pointers.reserve(argv.size() + 1);
  envp_pointers.reserve(envp.size() + 1);
  for (const auto& arg : argv) argv_pointers.push_back(const_cast<char*>(arg.c_str()));
  for (const auto& entry : envp) envp_pointers.push_back(const_cast<char*>(entry.c_str()));
  argv_pointers.push_back(nullptr);
  envp_pointers.push_back(nullptr);
  // execvpe searches the PATH of kolorun's own environment, which `environment` extends.
  ::execvpe(context.mpirun.c_str(), argv_pointers.data(), envp_pointers.data());
  const int error = errno;
  throw Error(
      fmt::format("kolorun --mpi: cannot run {} ({}); install Open MPI (Debian: "
                  "apt-get install openmpi-bin) or set KOLO_MPIRUN to its mpirun",
                  context.mpirun, std::strerror(error)));
}

}  // namespace kolo::launcher
