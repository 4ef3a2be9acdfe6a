// Every knob kolo reads, parsed once at init from the environment: KOLO_<NAME> wins over
// HOROVOD_<NAME>, which wins over the default, so existing Horovod job scripts keep working.
// The environment is read through a lookup function so tests can supply their own.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/logger.h"

namespace kolo::core {

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
// Reads the process environment (getenv).
EnvLookup process_environment();

struct Config {
  std::chrono::microseconds cycle_time{1000};      // CYCLE_TIME, milliseconds (fractions allowed)
  uint64_t fusion_threshold = 128ull << 20;        // FUSION_THRESHOLD, bytes; 0 disables fusion
  uint32_t cache_capacity = 1024;                  // CACHE_CAPACITY; 0 disables the cache
  LogLevel log_level = LogLevel::warning;          // LOG_LEVEL
  std::chrono::milliseconds peer_timeout{30000};   // PEER_TIMEOUT, seconds (fractions allowed)
  std::chrono::milliseconds start_timeout{30000};  // START_TIMEOUT, seconds
  uint64_t small_allreduce_bytes = 64ull * 1024;     // SMALL_ALLREDUCE_BYTES: recursive doubling below
  uint64_t frame_limit = 256ull << 20;             // MAX_CONTROL_MESSAGE, bytes
  bool shm_disable = false;                        // SHM_DISABLE: same-host peers use TCP too
  uint64_t shm_ring_bytes = 1ull << 20;            // SHM_RING_BYTES: per direction, power of two
  // SHM_ALLREDUCE_BYTES: allreduce of ranks all on one host goes through the host's shared-memory
  // arena up to this size (bytes); 0 = never (no arena is set up).
  uint64_t shm_allreduce_bytes = 1ull << 40;
  // HIERARCHICAL_ALLREDUCE: unset = automatic (on when hosts > 1 and some host runs > 1 rank).
  std::optional<bool> hierarchical_allreduce;
  // DYNAMIC_PROCESS_SETS: add_process_set()/remove_process_set() allowed after init (as Horovod).
  bool dynamic_process_sets = false;

  // Where each value came from ("KOLO_CYCLE_TIME", "HOROVOD_CYCLE_TIME" or "default"), for logs.
  std::vector<std::pair<std::string, std::string>> sources;
  // KOLO_* variables that name no known setting (likely typos), to warn about once.
  std::vector<std::string> unknown_variables;

  // Throws InvalidArgument naming the variable and the bad value.
  static Config from_env(const EnvLookup& lookup, const std::vector<std::string>& all_names);
  static Config from_process_env();
};

// Launch information the launcher (kolorun, horovodrun, mpirun) hands each rank.
struct LaunchInfo {
  int rank = 0;
  int size = 1;
  std::string hostname;            // empty: this machine's hostname
  std::string rendezvous_addr;     // empty: single process, no rendezvous
  uint16_t rendezvous_port = 0;
  std::string secret_hex;
  static LaunchInfo from_env(const EnvLookup& lookup);
};

}  // namespace kolo::core
