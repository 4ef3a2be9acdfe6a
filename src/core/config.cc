#include "core/config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "base/errors.h"
#include "base/name_list.h"
#include "core/thread_affinity.h"
#include "placement/cpu_list.h"

namespace kolo::core {

namespace {

// Looks a setting up as KOLO_<name>, then HOROVOD_<name>; records where it came from.
class SettingReader {
 public:
  SettingReader(const EnvLookup& lookup, Config& config) : lookup_(lookup), config_(config) {}

  std::optional<std::pair<std::string, std::string>> find(const std::string& name) {
    if (auto found = find_setting(lookup_, name)) {
      config_.sources.emplace_back(name, found->variable);
      return std::make_pair(std::move(found->variable), std::move(found->value));
    }
    config_.sources.emplace_back(name, "default");
    return std::nullopt;
  }

  double number(const std::string& name, double fallback, double min_value) {
    auto found = find(name);
    if (!found) return fallback;
    const auto& [variable, text] = *found;
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || value < min_value) {
      throw InvalidArgument(variable + "='" + text +
                            "' is not a number >= " + fmt::format("{}", min_value));
    }
    return value;
  }

  // 1/true/yes/on or 0/false/no/off (any case); nullopt when unset.
  std::optional<bool> flag(const std::string& name) {
    auto found = find(name);
    if (!found) return std::nullopt;
    const auto& [variable, text] = *found;
    std::string lower;
    for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return true;
    if (lower == "0" || lower == "false" || lower == "no" || lower == "off") return false;
    throw InvalidArgument(variable + "='" + text +
                          "' is not a flag (1/0, true/false, yes/no, on/off)");
  }

  std::optional<std::string> text(const std::string& name) {
    auto found = find(name);
    if (!found) return std::nullopt;
    return found->second;
  }

 private:
  const EnvLookup& lookup_;
  Config& config_;
};

template <typename Duration>
Duration from_units(double value, double units_per_second) {
  return Duration(static_cast<typename Duration::rep>(
      value * static_cast<double>(Duration::period::den) /
      (units_per_second * static_cast<double>(Duration::period::num))));
}

// Timeline, stall inspector and autotune settings.
void read_observability(SettingReader& reader, Config& config) {
  // Horovod's HOROVOD_TIMELINE=DYNAMIC means "no file until start_timeline() is called".
  const std::string timeline = reader.text("TIMELINE").value_or("");
  config.timeline_path = timeline == "DYNAMIC" ? "" : timeline;
  config.timeline_mark_cycles = reader.flag("TIMELINE_MARK_CYCLES").value_or(false);
  config.caller_drives = reader.flag("CALLER_DRIVES").value_or(true);
  config.stall_check = !reader.flag("STALL_CHECK_DISABLE").value_or(false);
  config.stall_warning_time = from_units<std::chrono::milliseconds>(
      reader.number("STALL_CHECK_TIME_SECONDS", 60.0, 0.001), 1.0);
  config.stall_shutdown_time = from_units<std::chrono::milliseconds>(
      reader.number("STALL_SHUTDOWN_TIME_SECONDS", 0.0, 0.0), 1.0);
  config.autotune = reader.flag("AUTOTUNE").value_or(false);
  config.autotune_log = reader.text("AUTOTUNE_LOG").value_or("");
  config.autotune_warmup_samples =
      static_cast<uint32_t>(reader.number("AUTOTUNE_WARMUP_SAMPLES", 3, 0));
  config.autotune_steps_per_sample =
      static_cast<uint32_t>(reader.number("AUTOTUNE_STEPS_PER_SAMPLE", 10, 1));
  config.autotune_samples_per_trial =
      static_cast<uint32_t>(reader.number("AUTOTUNE_SAMPLES_PER_TRIAL", 3, 1));
}

// Placement at init (core/rank_placement.h): the policy, what kolorun did, what another launcher
// did (its own variables, read as it spells them).
void read_placement(const EnvLookup& lookup, SettingReader& reader, Config& config) {
  if (auto found = reader.find("BIND_TO")) {
    config.bind_to = placement::parse_bind_to(found->second, found->first);
  }
  if (auto found = reader.find("CPU_SHARE")) {
    config.cpu_share = placement::parse_cpu_list(found->second, found->first);
  }
  if (auto found = reader.find("JOB_CPUS")) {
    config.job_cpus = placement::parse_cpu_list(found->second, found->first);
  }
  if (lookup("OMPI_MCA_orte_bound_at_launch").value_or("") == "1") {
    config.bound_by_launcher = "OMPI_MCA_orte_bound_at_launch=1";
  } else if (auto slurm = lookup("SLURM_CPU_BIND_TYPE");
             slurm && !slurm->empty() && slurm->find("none") == std::string::npos) {
    config.bound_by_launcher = "SLURM_CPU_BIND_TYPE=" + *slurm;
  }
}

}  // namespace

Config Config::from_env(const EnvLookup& lookup, const std::vector<std::string>& all_names) {
  Config config;
  SettingReader reader(lookup, config);
  config.cycle_time =
      from_units<std::chrono::microseconds>(reader.number("CYCLE_TIME", 1.0, 0.0), 1000.0);
  config.fusion_threshold =
      static_cast<uint64_t>(reader.number("FUSION_THRESHOLD", 128.0 * 1024 * 1024, 0));
  config.cache_capacity = static_cast<uint32_t>(reader.number("CACHE_CAPACITY", 1024, 0));
  if (auto level = reader.text("LOG_LEVEL")) config.log_level = parse_log_level(*level);
  config.peer_timeout =
      from_units<std::chrono::milliseconds>(reader.number("PEER_TIMEOUT", 30.0, 0.001), 1.0);
  config.start_timeout =
      from_units<std::chrono::milliseconds>(reader.number("START_TIMEOUT", 30.0, 0.001), 1.0);
  config.small_allreduce_bytes =
      static_cast<uint64_t>(reader.number("SMALL_ALLREDUCE_BYTES", 64 * 1024, 0));
  config.frame_limit =
      static_cast<uint64_t>(reader.number("MAX_CONTROL_MESSAGE", 256.0 * 1024 * 1024, 4096));
  config.shm_disable = reader.flag("SHM_DISABLE").value_or(false);
  const double ring_bytes = reader.number("SHM_RING_BYTES", 1024.0 * 1024, 4096);
  config.shm_ring_bytes = static_cast<uint64_t>(ring_bytes);
  if ((config.shm_ring_bytes & (config.shm_ring_bytes - 1)) != 0 ||
      static_cast<double>(config.shm_ring_bytes) != ring_bytes) {
    throw InvalidArgument(fmt::format("KOLO_SHM_RING_BYTES={} is not a power of two", ring_bytes));
  }
  config.shm_allreduce_bytes =
      static_cast<uint64_t>(reader.number("SHM_ALLREDUCE_BYTES", 1024.0 * 1024 * 1024 * 1024, 0));
  if (reader.text("SHM_SINGLE_COPY").value_or("auto") != "auto") {
    config.shm_single_copy = reader.flag("SHM_SINGLE_COPY");
  }
  config.shm_fold_whole_bytes = static_cast<uint64_t>(reader.number("SHM_FOLD_WHOLE_BYTES", 0, 0));
  if (auto found = reader.find("REDUCE_THREADS")) {
    const auto& [variable, text] = *found;
    int threads = -1;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), threads);
    if (error != std::errc{} || end != text.data() + text.size() || threads < 0 ||
        threads > kMaxReduceThreads) {
      throw InvalidArgument(
          fmt::format("{}='{}' is not a whole number of threads from 0 (auto) to {}", variable,
                      text, kMaxReduceThreads));
    }
    config.reduce_threads = threads;
  }
  config.hierarchical_allreduce = reader.flag("HIERARCHICAL_ALLREDUCE");
  if (auto found = reader.find("CPU_OPERATIONS")) {
    config.cpu_operations = backends::parse_cpu_operations(found->second, found->first);
  }
  // Horovod's gloo controller names it HOROVOD_GLOO_IFACE; kolo's own name is KOLO_IFACE.
  auto interfaces = reader.text("IFACE");
  if (!interfaces) interfaces = reader.text("GLOO_IFACE");
  if (interfaces) config.network_interfaces = parse_name_list(*interfaces);
  config.dynamic_process_sets = reader.flag("DYNAMIC_PROCESS_SETS").value_or(false);
  if (auto cores = reader.find("THREAD_AFFINITY")) {
    config.thread_affinity = parse_core_list(cores->second, cores->first);
  }
  read_placement(lookup, reader, config);
  config.log_timestamps = !reader.flag("LOG_HIDE_TIME").value_or(true);
  read_observability(reader, config);

  config.unknown_variables = unknown_kolo_variables(all_names);
  return config;
}

Config Config::from_process_env() { return from_env(process_env_lookup(), process_env_names()); }

}  // namespace kolo::core
