// kolorun (installed also as horovodrun): parse the command line, run the job, exit with its code.
//
// The launcher's rooms, each using only the ones listed before it:
//   hosts/      where the hosts of a job come from: -H, hostfiles, Slurm, Volcano, interfaces
//   cli/        the command line, --config-file and the tuning flags: the job's settings
//   spawn/      starting ranks: their environment, local processes, ssh and the remote agent's
//               protocol, mpirun (--mpi)
//   supervise/  a running job: output, signals, exit codes, failure policy, stopped ranks; `Job`
//               (a fixed set of ranks) and the remote agent that supervises a rank over ssh
//   elastic/    elastic rounds: the driver, the host pool and its blacklist, host discovery
// and here the four things kolorun can be asked to do: act as the remote agent (the hidden mode
// ssh runs on other hosts), --check-build, hand the job to mpirun, or run it itself (fixed or
// elastic).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/logger.h"
#include "launcher/check_build.h"
#include "launcher/cli/cli.h"
#include "launcher/elastic/driver.h"
#include "launcher/spawn/mpirun_launch.h"
#include "launcher/spawn/rank_environment.h"
#include "launcher/supervise/job.h"
#include "launcher/supervise/remote_agent.h"

int main(int argc, char** argv) {
  using namespace kolo::launcher;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == kRemoteAgentFlag) {
    return run_remote_agent(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  const ParseResult parsed = parse_command_line(args, kolo::process_env_lookup());
  if (!parsed.options) {
    std::fputs(parsed.message.c_str(), parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }
  if (parsed.options->check_build) return run_check_build(kKolorunVersion);
  const kolo::Logger logger(
      parsed.options->verbose ? kolo::LogLevel::info : kolo::LogLevel::warning, "[kolorun]");
  for (const auto& key : parsed.options->ignored_config_keys) {
    logger.warn("--config-file: '{}' does not apply to kolo; ignored", key);
  }
  for (const auto& warning : parsed.options->warnings) logger.warn("{}", warning);
  try {
    if (parsed.options->use_mpi) exec_mpirun(*parsed.options, current_environment(), logger);
    if (parsed.options->elastic) {
      return run_elastic_job(*parsed.options, current_environment(), logger);
    }
    return run_job(*parsed.options, current_environment(), logger);
  } catch (const kolo::InvalidArgument& error) {
    std::fprintf(stderr, "kolorun: error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kolorun: error: %s\n", error.what());
    return 1;
  }
}
