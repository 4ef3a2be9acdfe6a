#include "base/env.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "base/errors.h"

extern char** environ;

namespace kolo {

namespace {

// Every setting, by its name without prefix, in the order of README's table. Launch information
// is here too (kolorun sets it for each rank), and what Python reads (STAGE_THROUGH_HOST), so none
// of it is reported as unknown.
constexpr std::array<std::string_view, 56> kSettings = {
    // core: the runtime (core/config.cc)
    "CYCLE_TIME", "FUSION_THRESHOLD", "CACHE_CAPACITY", "LOG_LEVEL", "LOG_HIDE_TIME",
    "PEER_TIMEOUT", "START_TIMEOUT", "SMALL_ALLREDUCE_BYTES", "MAX_CONTROL_MESSAGE", "SHM_DISABLE",
    "SHM_RING_BYTES", "SHM_ALLREDUCE_BYTES", "HIERARCHICAL_ALLREDUCE", "CPU_OPERATIONS",
    "GPU_OPERATIONS", "CONTROLLER", "IFACE", "GLOO_IFACE", "DYNAMIC_PROCESS_SETS",
    "THREAD_AFFINITY",
    // observability and autotuning
    "TIMELINE", "TIMELINE_MARK_CYCLES", "STALL_CHECK_DISABLE", "STALL_CHECK_TIME_SECONDS",
    "STALL_SHUTDOWN_TIME_SECONDS", "AUTOTUNE", "AUTOTUNE_LOG", "AUTOTUNE_WARMUP_SAMPLES",
    "AUTOTUNE_STEPS_PER_SAMPLE", "AUTOTUNE_SAMPLES_PER_TRIAL",
    // launch information (kolorun's, or Horovod's gloo names for the store)
    "RANK", "SIZE", "HOSTNAME", "LOCAL_RANK", "LOCAL_SIZE", "CROSS_RANK", "CROSS_SIZE",
    "RENDEZVOUS_ADDR", "RENDEZVOUS_PORT", "GLOO_RENDEZVOUS_ADDR", "GLOO_RENDEZVOUS_PORT", "SECRET",
    "LAUNCHER_PID",
    // elastic training (kolorun's, for core/elastic_join.h)
    "ELASTIC", "WORKER_ID", "ELASTIC_FIRST_ROUND", "ELASTIC_TIMEOUT",
    // elastic: kolo.elastic.host_notices' poll, kolorun's discovery interval
    "ELASTIC_NOTICE_INTERVAL", "ELASTIC_DISCOVERY_INTERVAL",
    // the launcher (kolorun) and the MPI plugin
    "FAILURE_GRACE_SECONDS", "MPIRUN", "MPI_PLUGIN",
    // kolo.torch (staging.py)
    "STAGE_THROUGH_HOST",
    // kolo's own test scripts (README): ranks they start inherit them
    "FAULT_BOUNDS", "SOAK_STEPS", "TEST_SANITIZERS"};

}  // namespace

EnvLookup process_env_lookup() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (const char* value = std::getenv(name.c_str()); value != nullptr) return std::string(value);
    return std::nullopt;
  };
}

EnvLookup lookup_in(const std::map<std::string, std::string>& variables) {
  return [&variables](const std::string& name) -> std::optional<std::string> {
    auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

std::vector<std::string> process_env_names() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    names.emplace_back(text.substr(0, text.find('=')));
  }
  return names;
}

bool is_setting(std::string_view name) {
  return std::find(kSettings.begin(), kSettings.end(), name) != kSettings.end();
}

std::optional<FoundSetting> find_setting(const EnvLookup& lookup, std::string_view name) {
  if (!is_setting(name)) {
    throw Error("internal error: setting '" + std::string(name) +
                "' is read but missing from the table in base/env.cc");
  }
  for (const char* prefix : {"KOLO_", "HOROVOD_"}) {
    std::string variable = prefix + std::string(name);
    if (auto value = lookup(variable); value && !value->empty()) {
      return FoundSetting{std::move(variable), std::move(*value)};
    }
  }
  return std::nullopt;
}

std::optional<double> find_seconds_setting(const EnvLookup& lookup, std::string_view name) {
  auto found = find_setting(lookup, name);
  if (!found) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(found->value.c_str(), &end);
  if (end != found->value.c_str() + found->value.size() || !std::isfinite(value) || value < 0) {
    throw InvalidArgument(found->variable + "='" + found->value + "' is not a number of seconds");
  }
  return value;
}

std::vector<std::string> unknown_kolo_variables(const std::vector<std::string>& names) {
  std::vector<std::string> unknown;
  for (const auto& name : names) {
    if (name.rfind("KOLO_", 0) == 0 && !is_setting(std::string_view(name).substr(5))) {
      unknown.push_back(name);
    }
  }
  return unknown;
}

}  // namespace kolo
