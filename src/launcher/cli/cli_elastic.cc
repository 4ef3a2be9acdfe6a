#include "launcher/cli/cli_elastic.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "base/errors.h"

namespace kolo::launcher {

void add_elastic_flags(CLI::App& app, ElasticFlags& flags) {
  app.add_option("--min-np,--min-num-proc", flags.min_np,
                 "Elastic: minimum number of processes; below it for longer than "
                 "--elastic-timeout the job fails (default: -np).")
      ->group("elastic arguments");
  app.add_option("--max-np,--max-num-proc", flags.max_np,
                 "Elastic: maximum number of processes (default: every available slot).")
      ->group("elastic arguments");
  app.add_option("--host-discovery-script", flags.discovery_script,
                 "Elastic: executable printing the available hosts, one 'host' or 'host:slots' "
                 "per line; run every second.")
      ->group("elastic arguments");
  app.add_option("--elastic-timeout", flags.elastic_timeout,
                 "Elastic: seconds to wait for at least --min-np slots before failing the job "
                 "(default 600, or HOROVOD_ELASTIC_TIMEOUT).")
      ->group("elastic arguments");
  app.add_option("--reset-limit", flags.reset_limit,
                 "Elastic: maximum number of resets (membership changes) before the job fails "
                 "(default: unlimited).")
      ->group("elastic arguments");
  app.add_option("--blacklist-cooldown-range", flags.cooldown_range,
                 "Elastic: MIN MAX seconds; a failed host is re-admitted after a random cooldown "
                 "in this range (default: never).")
      ->expected(2)
      // Exactly two words: the command that follows is not a third value (CLI11 lets a list
      // option take every following non-option word otherwise).
      ->allow_extra_args(false)
      ->group("elastic arguments");
}

void finish_elastic(const ElasticFlags& flags, const EnvLookup& env, LaunchOptions& options) {
  options.elastic = flags.min_np || flags.max_np || flags.discovery_script;
  if (!options.elastic) {
    if (flags.elastic_timeout || flags.reset_limit || !flags.cooldown_range.empty()) {
      throw InvalidArgument(
          "--elastic-timeout, --reset-limit and --blacklist-cooldown-range need elastic mode: "
          "give --min-np, --max-np or --host-discovery-script too");
    }
    return;
  }
  if (options.use_mpi) throw InvalidArgument("elastic training cannot run under --mpi");
  if (flags.min_np && *flags.min_np < 1) {
    throw InvalidArgument(fmt::format("--min-np must be at least 1, got {}", *flags.min_np));
  }
  if (flags.max_np && *flags.max_np < 1) {
    throw InvalidArgument(fmt::format("--max-np must be at least 1, got {}", *flags.max_np));
  }
  options.min_np = flags.min_np.value_or(options.num_proc > 0 ? options.num_proc : 1);
  options.max_np = flags.max_np.value_or(0);
  if (options.num_proc == 0) options.num_proc = options.min_np;
  if (options.max_np > 0 && options.min_np > options.max_np) {
    throw InvalidArgument(
        fmt::format("--min-np {} is larger than --max-np {}", options.min_np, options.max_np));
  }
  if (options.num_proc < options.min_np ||
      (options.max_np > 0 && options.num_proc > options.max_np)) {
    throw InvalidArgument(fmt::format("-np {} is outside --min-np {} .. --max-np {}",
                                      options.num_proc, options.min_np,
                                      options.max_np > 0 ? std::to_string(options.max_np) : "any"));
  }
  options.discovery_script = flags.discovery_script;
  if (options.discovery_script && (options.hosts || options.hostfile)) {
    throw InvalidArgument("--host-discovery-script replaces -H/--hostfile: give one or the other");
  }
  auto timeout = flags.elastic_timeout;
  if (!timeout) timeout = find_seconds_setting(env, "ELASTIC_TIMEOUT");  // KOLO_ or HOROVOD_
  options.elastic_timeout_seconds = timeout.value_or(600.0);
  if (!(options.elastic_timeout_seconds > 0) || !std::isfinite(options.elastic_timeout_seconds)) {
    throw InvalidArgument(fmt::format("--elastic-timeout must be a positive number of seconds"));
  }
  const auto interval = find_seconds_setting(env, "ELASTIC_DISCOVERY_INTERVAL");
  options.discovery_interval_seconds = interval.value_or(1.0);
  if (!(options.discovery_interval_seconds > 0) ||
      !std::isfinite(options.discovery_interval_seconds)) {
    throw InvalidArgument("KOLO_ELASTIC_DISCOVERY_INTERVAL must be a positive number of seconds");
  }
  if (flags.reset_limit && *flags.reset_limit < 0) {
    throw InvalidArgument(fmt::format("--reset-limit must be >= 0, got {}", *flags.reset_limit));
  }
  options.reset_limit = flags.reset_limit;
  if (!flags.cooldown_range.empty()) {
    const double low = flags.cooldown_range[0];
    const double high = flags.cooldown_range[1];
    if (!(low >= 0) || !(high >= low) || !std::isfinite(high)) {
      throw InvalidArgument(
          fmt::format("--blacklist-cooldown-range {} {}: need 0 <= MIN <= MAX seconds", low, high));
    }
    options.blacklist_cooldown = std::make_pair(low, high);
  }
}

}  // namespace kolo::launcher
