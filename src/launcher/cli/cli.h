// kolorun's command line, mirroring horovodrun's: the options model, the argv normalisation that
// lets CLI11 read horovodrun's single-dash long flags (-np, -hostfile), and the parse itself.
// Everything from the first positional argument on is the command to run, untouched, so
// `kolorun -np 2 python train.py -np 5` gives the script its own -np.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/env.h"
#include "launcher/hosts/host_sources.h"

namespace kolo::launcher {

// KOLO_VERSION_STRING comes from the file VERSION, through CMake.
inline constexpr const char* kKolorunVersion = KOLO_VERSION_STRING;

struct LaunchOptions {
  int num_proc = 0;                     // 0 when -np was not given (a Slurm allocation implies it)
  std::optional<std::string> hosts;     // -H host:slots,...
  std::optional<std::string> hostfile;  // --hostfile FILE
  std::optional<HostfileFormat> hostfile_format;  // --hosts-file-format mpi|volcano
  std::optional<int> slots_per_host;              // --slots-per-host N
  std::vector<std::string> command;  // never empty after a successful parse, unless check_build
  bool check_build = false;          // --check-build: print what this build offers, run nothing
  // -x NAME / -x NAME=VALUE (mpirun's): variables forwarded to (or set on) every rank.
  std::vector<std::string> forwarded_env;

  double start_timeout_seconds = 30;  // --start-timeout, else KOLO_/HOROVOD_START_TIMEOUT
  double failure_grace_seconds = 5;   // --failure-grace-seconds, else KOLO_FAILURE_GRACE_SECONDS
  bool verbose = false;
  std::optional<std::string> output_filename;  // per-rank logs under DIR/rank.N/{stdout,stderr}
  bool prefix_output_with_timestamp = false;
  std::optional<std::string> log_level;  // canonical ("DEBUG"), exported as KOLO_LOG_LEVEL

  // Kept for the ssh spawner.
  std::optional<int> ssh_port;
  std::optional<std::string> ssh_identity_file;
  std::vector<std::string> network_interfaces;

  // --mpi: launch through Open MPI's mpirun (mpirun_command.h); --mpi-args: extra mpirun words;
  // --binding-args: mpirun's binding words instead of "-bind-to none -map-by slot".
  bool use_mpi = false;
  std::optional<std::string> mpi_args;
  std::optional<std::string> binding_args;

  // From the tuning-flag table (tuning_flags.h): variables to export to every rank.
  // --config-file values come first; a flag given on the command line replaces its file value.
  std::vector<std::pair<std::string, std::string>> tuning_environment;
  // Elastic training: on when --min-np, --max-np or --host-discovery-script is given. Then
  // num_proc is the start size, min_np defaults to it, max_np 0 means "every available slot".
  bool elastic = false;
  int min_np = 0;
  int max_np = 0;
  std::optional<std::string> discovery_script;
  double elastic_timeout_seconds = 600;
  // How often the --host-discovery-script runs (KOLO_/HOROVOD_ELASTIC_DISCOVERY_INTERVAL; 1 s,
  // Horovod's DISCOVER_HOSTS_FREQUENCY_SECS).
  double discovery_interval_seconds = 1.0;
  std::optional<int> reset_limit;
  std::optional<std::pair<double, double>> blacklist_cooldown;  // seconds, MIN MAX

  // Config-file keys kolo does not use, for kolorun to mention.
  std::vector<std::string> ignored_config_keys;
  // One line per horovodrun flag accepted without effect, saying what kolo does instead; kolorun
  // prints each as a warning before starting the job.
  std::vector<std::string> warnings;
};

struct ParseResult {
  std::optional<LaunchOptions> options;  // set when the job should run
  int exit_code = 0;                     // otherwise: exit with this code...
  std::string message;                   // ...after printing this (stdout if 0, else stderr)
};

// Rewrites horovodrun's single-dash long flags (-np, -hostfile, -prefix-timestamp, also with
// "=value") to their double-dash forms, stopping at the command. `args` excludes argv[0].
std::vector<std::string> normalize_argv(const std::vector<std::string>& args);

// Parses `args` (without argv[0]); `env` supplies defaults that horovodrun also reads from the
// environment. Never throws for bad input: errors come back as exit code 2 and a message.
ParseResult parse_command_line(const std::vector<std::string>& args, const EnvLookup& env);

}  // namespace kolo::launcher
