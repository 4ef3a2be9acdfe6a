#include "launcher/cli/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "base/env.h"
#include "base/errors.h"
#include "base/logger.h"
#include "launcher/cli/cli_elastic.h"
#include "launcher/cli/config_file.h"
#include "launcher/cli/tuning_flags.h"

namespace kolo::launcher {

namespace {

// horovodrun (argparse) accepts these single-dash spellings; CLI11 would read "-np" as "-n p".
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kSingleDashAliases{{
    {"-np", "--num-proc"},
    {"-hostfile", "--hostfile"},
    {"-prefix-timestamp", "--prefix-output-with-timestamp"},
    {"-cb", "--check-build"},
}};

// horovodrun flags kolorun does not implement: named in the error so the user knows the flag is
// recognised but unsupported, not mistyped. (Empty since elastic training landed; kept so a
// future unsupported flag has its place.)
constexpr std::array<std::string_view, 0> kUnsupportedHorovodFlags{};

// Values as CLI11 stores them; turned into LaunchOptions after parsing, where the environment
// defaults and cross-option checks apply.
struct RawOptions {
  std::optional<int> num_proc;
  std::optional<std::string> hosts;
  std::optional<std::string> hostfile;
  std::optional<double> start_timeout;
  std::optional<double> failure_grace;
  bool verbose = false;
  std::optional<std::string> output_filename;
  bool prefix_timestamp = false;
  std::optional<std::string> log_level;
  std::optional<int> ssh_port;
  std::optional<std::string> ssh_identity_file;
  std::vector<std::string> network_interfaces;
  std::optional<int> slots_per_host;
  std::optional<std::string> hosts_file_format;
  ElasticFlags elastic;  // horovodrun's elastic group (cli_elastic.h)
  std::vector<std::string> forwarded_env;
  bool check_build = false;
  bool gloo = false;
  bool mpi = false;
  std::optional<std::string> mpi_args;
  std::optional<std::string> binding_args;
  bool tcp = false;
  bool jsrun = false;
  bool disable_cache = false;
  std::optional<std::string> config_file;
  // Tuning flags as given, in command-line order: (row of tuning_flags(), value text). The last
  // one of a setting wins, as with horovodrun's argparse (--autotune --no-autotune: off).
  std::vector<std::pair<size_t, std::string>> tuning;
};

// CLI11's help, with horovodrun's usage line and single-dash spellings shown beside the names.
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(36); }
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: kolorun -np N [-H host:slots,...|-hostfile FILE] [options] COMMAND [ARGS...]\n";
  }
  std::string make_option_name(const CLI::Option* option, bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(option, positional);
    for (const auto& [alias, canonical] : kSingleDashAliases) {
      if (name == canonical) return std::string(alias) + "," + name;
    }
    return name;
  }
};

void configure(CLI::App& app, RawOptions& raw) {
  app.name("kolorun");
  app.description("Launch a kolo (Horovod-compatible) training job; also installed as horovodrun.");
  app.footer(
      "Everything from COMMAND on is passed to the ranks unchanged. Each output line is "
      "prefixed with [<rank>]<stdout>: or [<rank>]<stderr>:.");
  app.formatter(std::make_shared<HelpFormatter>());
  app.prefix_command();  // everything from the first positional on is the command
  app.set_help_flag("-h,--help", "Show this help message and exit.");
  // As argparse (horovodrun): an option given twice takes its last value. The list options
  // (-x, --network-interfaces) opt back into collecting every value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("-v,--version", fmt::format("kolorun {}", kKolorunVersion),
                       "Shows the kolo version.");

  app.add_option("--num-proc", raw.num_proc, "Total number of training processes (required).");
  app.add_option("--start-timeout", raw.start_timeout,
                 "Seconds the ranks have to start and find each other (rendezvous). The default "
                 "value is 30 seconds. Alternatively, the environment variable "
                 "HOROVOD_START_TIMEOUT can also be used to specify the initialization timeout.");
  app.add_option("--failure-grace-seconds", raw.failure_grace,
                 "After a rank fails, seconds to let the other ranks exit on their own before "
                 "kolorun terminates them (default 5, or KOLO_FAILURE_GRACE_SECONDS).");
  app.add_option("--output-filename", raw.output_filename,
                 "Writes stdout / stderr of all processes to a filename of the form "
                 "<output_filename>/rank.<rank>/<stdout | stderr>. The <rank> will be padded with "
                 "0 characters to ensure lexicographical order.");
  app.add_flag("--verbose", raw.verbose, "If this flag is set, extra messages will be printed.");
  app.add_option("--network-interfaces,--network-interface", raw.network_interfaces,
                 "Network interfaces that can be used for communication separated by comma. With "
                 "remote hosts the rendezvous server listens on the first of them that has an IPv4 "
                 "address (otherwise on the address that routes toward the remote hosts), and the "
                 "ranks publish only these interfaces' addresses to each other (they get the list "
                 "as KOLO_IFACE and HOROVOD_GLOO_IFACE).")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);  // one value per use, so the command is never swallowed
  app.add_flag("--gloo", raw.gloo,
               "Accepted for compatibility: kolo always runs its own (gloo-style) controller.");
  auto* mpi = app.add_flag("--mpi", raw.mpi,
                           "Launch through Open MPI's mpirun and run the collectives on MPI "
                           "(HOROVOD_CPU_OPERATIONS=mpi).");
  mpi->excludes(app.get_option("--gloo"));
  app.add_option("--mpi-args", raw.mpi_args,
                 "Extra arguments for mpirun (with --mpi), e.g. "
                 "\"--oversubscribe -mca btl tcp,self\".")
      ->allow_extra_args(false);
  app.add_option("--binding-args", raw.binding_args,
                 "Process binding arguments for mpirun (with --mpi), replacing horovodrun's "
                 "default \"-bind-to none -map-by slot\", e.g. --binding-args=\"--rankfile "
                 "myrankfile\".")
      ->allow_extra_args(false);
  app.add_flag("--tcp", raw.tcp,
               "Only TCP is used for communication (sets NCCL_IB_DISABLE=1 as horovodrun does; "
               "kolo's transports are TCP between hosts and shared memory within a host anyway).");
  app.add_flag("--jsrun", raw.jsrun,
               "Accepted for horovodrun compatibility: kolo has no jsrun (IBM LSF) launcher and "
               "starts the ranks itself.");
  app.add_flag("--disable-cache", raw.disable_cache,
               "Accepted for compatibility: kolorun keeps no cache of host checks.");

  auto* hosts = app.add_option("-H,--hosts", raw.hosts,
                               "List of host names and the number of available slots for running "
                               "processes on each, of the form: <hostname>:<slots> (e.g.: "
                               "host1:2,host2:4,host3:1). If not specified, defaults to using "
                               "localhost:<np>");
  auto* hostfile = app.add_option("--hostfile", raw.hostfile,
                                  "Path to a host file containing the list of host "
                                  "names and the number of available slots. Each line of the file "
                                  "must be of the form: <hostname> slots=<slots>");
  hosts->excludes(hostfile)->group("host arguments");
  hostfile->group("host arguments");
  app.add_option("--slots-per-host,--slots", raw.slots_per_host,
                 "Slots of a host given without a count: -H/--hostfile entries without one, every "
                 "Volcano worker (default 1), every Slurm node (default: SLURM_TASKS_PER_NODE).")
      ->group("host arguments");
  add_elastic_flags(app, raw.elastic);
  app.add_option("--hosts-file-format", raw.hosts_file_format,
                 "Format of --hostfile: 'mpi' (<hostname> slots=<slots> or <hostname>:<slots>, the "
                 "default) or 'volcano' (one worker per line, as in /etc/volcano/worker.host, "
                 "which is read without this flag when it exists).")
      ->check(CLI::IsMember({"mpi", "volcano"}))
      ->group("host arguments");
  app.add_option(
         "-x,--env", raw.forwarded_env,
         "NAME or NAME=VALUE, repeatable (as mpirun -x): forward the launcher's NAME to "
         "every rank, or set it to VALUE. Remote ranks otherwise get only kolo's variables, "
         "PATH, PYTHONPATH and LD_LIBRARY_PATH from the launcher.")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app.add_flag("--check-build", raw.check_build,
               "Shows which frameworks, controllers and tensor operations this kolo offers, and "
               "exits.");

  app.add_option("-p,--ssh-port", raw.ssh_port, "SSH port on all the hosts.")
      ->group("SSH arguments");
  app.add_option("-i,--ssh-identity-file", raw.ssh_identity_file,
                 "File on the driver from which the identity (private key) is read.")
      ->group("SSH arguments");

  app.add_option("--log-level", raw.log_level,
                 "Minimum level to log to stderr from the kolo runtime in every rank: TRACE, "
                 "DEBUG, INFO, WARNING, ERROR, FATAL (default: WARNING).")
      ->group("logging arguments");
  app.add_flag("--prefix-output-with-timestamp", raw.prefix_timestamp,
               "Timestamp each line of output to stdout and stderr.")
      ->group("logging arguments");

  app.add_option("--config-file", raw.config_file,
                 "Path to a YAML file with horovodrun's configuration (params, autotune, timeline, "
                 "stall_check, library_options, logging); command-line flags override it.");
  const auto flags = tuning_flags();
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string name(flags[i].flag);
    const std::string help(flags[i].help);
    auto record = [&raw, i](const std::string& text) { raw.tuning.emplace_back(i, text); };
    switch (flags[i].kind) {
      case TuningFlag::ValueKind::switch_on:
      case TuningFlag::ValueKind::switch_off:
        app.add_flag_callback(
               name, [record] { record("1"); }, help)
            ->trigger_on_parse()  // recorded in command-line order, so the last one wins
            ->group("tuneable parameter arguments");
        break;
      case TuningFlag::ValueKind::path:
        app.add_option_function<std::string>(name, record, help)
            ->trigger_on_parse()
            ->type_name("FILE")
            ->group("tuneable parameter arguments");
        break;
      default:
        app.add_option_function<std::string>(name, record, help)
            ->trigger_on_parse()
            ->type_name(flags[i].kind == TuningFlag::ValueKind::non_negative_number ? "FLOAT"
                                                                                    : "INT")
            ->group("tuneable parameter arguments");
    }
  }
}

bool takes_value(CLI::App& app, const std::string& token) {
  std::string name = token.substr(0, token.find('='));
  const CLI::Option* option = app.get_option_no_throw(name);
  return option != nullptr && option->get_items_expected_max() > 0;
}

std::string unknown_option_message(const std::string& token) {
  const std::string name = token.substr(0, token.find('='));
  if (std::find(std::begin(kUnsupportedHorovodFlags), std::end(kUnsupportedHorovodFlags), name) !=
      std::end(kUnsupportedHorovodFlags)) {
    return fmt::format("{} is a horovodrun option that kolorun does not support yet", name);
  }
  return fmt::format(
      "unrecognized option '{}' (kolorun's options go before the command; see kolorun --help)",
      token);
}

// Turns the tuning flags given (config file first, then the command line) into the ranks'
// environment, the last value of each setting winning, and a warning for each flag kolo has no
// mechanism for.
void append_tuning_settings(const std::vector<std::pair<size_t, std::string>>& given,
                            LaunchOptions& options) {
  const auto flags = tuning_flags();
  std::vector<std::pair<size_t, std::string>> last;  // one per setting, in first-given order
  for (const auto& [row, text] : given) {
    auto same_setting = [&, row = row](const auto& entry) {
      return flags[entry.first].setting == flags[row].setting;
    };
    auto found = std::find_if(last.begin(), last.end(), same_setting);
    if (found == last.end()) {
      last.emplace_back(row, text);
    } else {
      *found = {row, text};
    }
  }
  for (const auto& [row, text] : last) {
    for (auto& entry : tuning_flag_environment(flags[row], text)) {
      options.tuning_environment.push_back(std::move(entry));
    }
    if (flags[row].effect == TuningFlag::Effect::not_in_kolo) {
      options.warnings.push_back(
          fmt::format("{}: {}; accepted and ignored", flags[row].flag, flags[row].instead));
    }
  }
}

LaunchOptions finish(const RawOptions& raw, std::vector<std::string> rest, const EnvLookup& env) {
  LaunchOptions options;
  if (!rest.empty() && rest.front() == "--") {
    rest.erase(rest.begin());  // after "--" even a leading dash belongs to the command
  } else if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-') {
    throw InvalidArgument(unknown_option_message(rest.front()));
  }
  options.check_build = raw.check_build;
  if (rest.empty() && !raw.check_build) {
    throw InvalidArgument("no command to run: kolorun -np N COMMAND [ARGS...]");
  }
  if (raw.num_proc && *raw.num_proc < 1) {
    throw InvalidArgument(fmt::format("-np must be at least 1, got {}", *raw.num_proc));
  }
  options.num_proc = raw.num_proc.value_or(0);  // resolved with the hosts (Slurm implies it)
  options.command = std::move(rest);
  options.hosts = raw.hosts;
  options.hostfile = raw.hostfile;
  if (raw.slots_per_host && *raw.slots_per_host < 1) {
    throw InvalidArgument(
        fmt::format("--slots-per-host must be at least 1, got {}", *raw.slots_per_host));
  }
  options.slots_per_host = raw.slots_per_host;
  if (raw.hosts_file_format) {
    options.hostfile_format =
        *raw.hosts_file_format == "volcano" ? HostfileFormat::volcano : HostfileFormat::mpi;
  }
  for (const auto& entry : raw.forwarded_env) {
    const std::string name = entry.substr(0, entry.find('='));
    if (name.empty() ||
        name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                               "0123456789_") != std::string::npos ||
        std::isdigit(static_cast<unsigned char>(name[0]))) {
      throw InvalidArgument(
          fmt::format("-x '{}': '{}' is not an environment variable name", entry, name));
    }
  }
  options.forwarded_env = raw.forwarded_env;

  // Flag, then KOLO_* (kolo's own name wins, as everywhere), then the Horovod variable, then 30.
  auto start = raw.start_timeout;
  if (!start) start = find_seconds_setting(env, "START_TIMEOUT");
  options.start_timeout_seconds = start.value_or(30.0);
  if (!(options.start_timeout_seconds > 0) || !std::isfinite(options.start_timeout_seconds)) {
    throw InvalidArgument(
        fmt::format("--start-timeout must be a positive number of seconds, got {}",
                    options.start_timeout_seconds));
  }
  auto grace = raw.failure_grace;
  if (!grace) grace = find_seconds_setting(env, "FAILURE_GRACE_SECONDS");
  options.failure_grace_seconds = grace.value_or(5.0);
  if (!(options.failure_grace_seconds >= 0) || !std::isfinite(options.failure_grace_seconds)) {
    throw InvalidArgument(
        fmt::format("--failure-grace-seconds must be >= 0, got {}", options.failure_grace_seconds));
  }

  options.verbose = raw.verbose;
  options.output_filename = raw.output_filename;
  options.prefix_output_with_timestamp = raw.prefix_timestamp;
  // The config file supplies defaults for the tuning flags and the log level: its values come
  // first, so a command-line flag for the same setting replaces them.
  std::vector<std::pair<size_t, std::string>> tuning;
  std::optional<std::string> log_level = raw.log_level;
  if (raw.config_file) {
    ConfigFileSettings file = read_config_file(*raw.config_file);
    const auto flags = tuning_flags();
    for (const auto& [flag, text] : file.flags) {
      for (size_t i = 0; i < flags.size(); ++i) {
        if (flags[i].flag == flag) tuning.emplace_back(i, text);
      }
    }
    if (!log_level) log_level = file.log_level;
    options.tuning_environment.insert(options.tuning_environment.end(), file.environment.begin(),
                                      file.environment.end());
    options.ignored_config_keys = std::move(file.ignored);
  }
  if (log_level) {
    options.log_level = std::string(log_level_name(parse_log_level(*log_level)));
  }
  if (raw.ssh_port && (*raw.ssh_port < 1 || *raw.ssh_port > 65535)) {
    throw InvalidArgument(fmt::format("--ssh-port {} is not a TCP port (1-65535)", *raw.ssh_port));
  }
  options.ssh_port = raw.ssh_port;
  options.ssh_identity_file = raw.ssh_identity_file;
  options.network_interfaces = raw.network_interfaces;

  options.use_mpi = raw.mpi;
  options.mpi_args = raw.mpi_args;
  if (options.mpi_args && !options.use_mpi) {
    throw InvalidArgument(
        "--mpi-args only applies with --mpi (kolorun launches the ranks itself "
        "otherwise)");
  }
  options.binding_args = raw.binding_args;
  if (options.binding_args && !options.use_mpi) {
    // horovodrun ignores it without MPI too; say so instead of failing a working launch line.
    options.warnings.emplace_back(
        "--binding-args only applies with --mpi (it replaces mpirun's \"-bind-to none -map-by "
        "slot\"); kolorun starts the ranks itself and binds them to no core; ignored");
  }
  if (raw.tcp) options.tuning_environment.emplace_back("NCCL_IB_DISABLE", "1");
  if (raw.jsrun) {
    options.warnings.emplace_back(
        "--jsrun: kolo has no jsrun (IBM LSF) launcher; kolorun starts the ranks itself (locally, "
        "over ssh, or through mpirun with --mpi)");
  }
  finish_elastic(raw.elastic, env, options);
  tuning.insert(tuning.end(), raw.tuning.begin(), raw.tuning.end());
  append_tuning_settings(tuning, options);
  return options;
}

}  // namespace

std::vector<std::string> normalize_argv(const std::vector<std::string>& args) {
  CLI::App app;
  RawOptions raw;
  configure(app, raw);

  std::vector<std::string> out;
  out.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    std::string token = args[i];
    // "--" or the first positional starts the command: copy the rest untouched.
    if (token == "--" || token.size() < 2 || token[0] != '-') {
      out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    for (const auto& [alias, canonical] : kSingleDashAliases) {
      if (token == alias) {
        token = std::string(canonical);
      } else if (token.size() > alias.size() && token.compare(0, alias.size(), alias) == 0 &&
                 token[alias.size()] == '=') {
        token = std::string(canonical) + token.substr(alias.size());
      }
    }
    out.push_back(token);
    // An option's separate value must not be mistaken for the command ("-H a:1 python ...").
    const bool inline_value =
        token.find('=') != std::string::npos || (token[1] != '-' && token.size() > 2);  // "-p22"
    if (!inline_value && takes_value(app, token) && i + 1 < args.size()) {
      out.push_back(args[++i]);
    }
  }
  return out;
}

ParseResult parse_command_line(const std::vector<std::string>& args, const EnvLookup& env) {
  CLI::App app;
  RawOptions raw;
  configure(app, raw);
  ParseResult result;
  try {
    std::vector<std::string> reversed = normalize_argv(args);
    std::reverse(reversed.begin(), reversed.end());  // CLI11 consumes vectors from the back
    app.parse(reversed);
    result.options = finish(raw, app.remaining(), env);
  } catch (const CLI::CallForHelp&) {
    result.message = app.help();
  } catch (const CLI::CallForVersion& version) {
    result.message = std::string(version.what()) + "\n";
  } catch (const CLI::ParseError& error) {
    result.exit_code = 2;  // argparse's (and so horovodrun's) usage-error status
    result.message = fmt::format("kolorun: error: {}\n", error.what());
  } catch (const Error& error) {
    result.exit_code = 2;
    result.message = fmt::format("kolorun: error: {}\n", error.what());
  }
  return result;
}

}  // namespace kolo::launcher
