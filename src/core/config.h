// Every knob kolo reads, parsed once at init from the environment: KOLO_<NAME> wins over
// HOROVOD_<NAME>, which wins over the default, so existing Horovod job scripts keep working.
// The environment is read through base/env.h (the one table of setting names), with a lookup
// function so tests can supply their own.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend_choice.h"
#include "base/env.h"
#include "base/logger.h"
#include "placement/rank_plan.h"

namespace kolo::core {

// REDUCE_THREADS' largest value (comm::WorkSplitter counts its helpers in 7 bits).
inline constexpr int kMaxReduceThreads = 64;

struct Config {
  std::chrono::microseconds cycle_time{1000};      // CYCLE_TIME, milliseconds (fractions allowed)
  uint64_t fusion_threshold = 128ull << 20;        // FUSION_THRESHOLD, bytes; 0 disables fusion
  uint32_t cache_capacity = 1024;                  // CACHE_CAPACITY; 0 disables the cache
  LogLevel log_level = LogLevel::warning;          // LOG_LEVEL
  std::chrono::milliseconds peer_timeout{30000};   // PEER_TIMEOUT, seconds (fractions allowed)
  std::chrono::milliseconds start_timeout{30000};  // START_TIMEOUT, seconds
  uint64_t small_allreduce_bytes = 64ull * 1024;  // SMALL_ALLREDUCE_BYTES: recursive doubling below
  uint64_t frame_limit = 256ull << 20;            // MAX_CONTROL_MESSAGE, bytes
  bool shm_disable = false;                       // SHM_DISABLE: same-host peers use TCP too
  uint64_t shm_ring_bytes = 1ull << 20;           // SHM_RING_BYTES: per direction, power of two
  // SHM_ALLREDUCE_BYTES: allreduce of ranks all on one host goes through the host's shared-memory
  // arena up to this size (bytes); 0 = never (no arena is set up).
  uint64_t shm_allreduce_bytes = 1ull << 40;
  // SHM_FOLD_WHOLE_BYTES: arena allreduce steps up to this size are folded whole by every rank;
  // 0 = auto (comm::detail::folds_whole).
  uint64_t shm_fold_whole_bytes = 0;
  // SHM_SINGLE_COPY: ranks of one host may read each other's buffers in one copy
  // (comm/single_copy.h); nullopt ("auto", the default): allgather and alltoall from the block
  // size the ranks' probe measures; true (1): from 32 KiB; false (0): two copies through the arena.
  std::optional<bool> shm_single_copy;
  // REDUCE_THREADS: threads sharing a large arena allreduce's copies and folds, the background
  // thread included (comm/work_splitter.h); 0 = decided at init from the rank's share
  // (core/reduce_threads.h), 1 = none added.
  int reduce_threads = 0;
  // HIERARCHICAL_ALLREDUCE: unset = automatic (on when hosts > 1 and some host runs > 1 rank).
  std::optional<bool> hierarchical_allreduce;
  // CPU_OPERATIONS: "gloo" (kolo's transports, default) or "mpi" (the MPI plugin).
  backends::CpuOperations cpu_operations = backends::CpuOperations::kolo;
  // KOLO_IFACE, else HOROVOD_GLOO_IFACE ("eth0,eth1"): the interfaces whose addresses this rank
  // publishes to its peers. Empty: every up interface, the route toward the rendezvous first.
  std::vector<std::string> network_interfaces;
  // DYNAMIC_PROCESS_SETS: add_process_set()/remove_process_set() allowed after init (as Horovod).
  bool dynamic_process_sets = false;
  // THREAD_AFFINITY ("0,2"): the core each local rank's background thread is pinned to, one per
  // local rank in local-rank order (as Horovod). Empty: not pinned.
  std::vector<int> thread_affinity;
  // BIND_TO: "core" (default): each local rank gets its own share of the job's cores at init
  // unless its launcher placed it (core/rank_placement.h); "none": ranks keep the mask they got.
  placement::BindTo bind_to = placement::BindTo::core;
  // Set by kolorun for the ranks it placed: CPU_SHARE, the rank's CPUs ("2-3"); JOB_CPUS, the
  // CPUs the whole job may use on this host (the mask kolorun inherited), which tells whether the
  // host's ranks outnumber its CPUs.
  std::optional<std::vector<int>> cpu_share;
  std::optional<std::vector<int>> job_cpus;
  // Not a setting: an MPI launcher or srun that bound this rank says so in its own variables
  // (OMPI_MCA_orte_bound_at_launch, SLURM_CPU_BIND_TYPE); its choice then stands.
  std::optional<std::string> bound_by_launcher;
  // !LOG_HIDE_TIME: a timestamp on each of kolo's log lines. Off by default (Horovod shows one
  // unless HOROVOD_LOG_HIDE_TIME=1); HOROVOD_LOG_HIDE_TIME=0 or --log-with-timestamp turns it on.
  bool log_timestamps = false;

  // Observability (timeline, stall inspector) and autotuning; see docs/guide/configuration.md.
  std::string timeline_path;  // TIMELINE: Chrome-trace file rank 0 writes; "" or DYNAMIC: none
  bool timeline_mark_cycles = false;  // TIMELINE_MARK_CYCLES
  // Not settings: set by Runtime for an elastic round after the job's first, whose rank 0
  // continues the timeline file instead of truncating it, times counted from `timeline_zero`.
  bool timeline_continue = false;
  std::optional<std::chrono::steady_clock::time_point> timeline_zero;
  bool caller_drives = true;                            // CALLER_DRIVES (core/session.h)
  bool stall_check = true;                              // !STALL_CHECK_DISABLE
  std::chrono::milliseconds stall_warning_time{60000};  // STALL_CHECK_TIME_SECONDS
  std::chrono::milliseconds stall_shutdown_time{0};     // STALL_SHUTDOWN_TIME_SECONDS; 0: never
  bool autotune = false;                                // AUTOTUNE
  std::string autotune_log;                             // AUTOTUNE_LOG: CSV of every trial
  uint32_t autotune_warmup_samples = 3;                 // AUTOTUNE_WARMUP_SAMPLES
  uint32_t autotune_steps_per_sample = 10;              // AUTOTUNE_STEPS_PER_SAMPLE
  uint32_t autotune_samples_per_trial = 3;              // AUTOTUNE_SAMPLES_PER_TRIAL

  // Where each value came from ("KOLO_CYCLE_TIME", "HOROVOD_CYCLE_TIME" or "default"), for logs.
  std::vector<std::pair<std::string, std::string>> sources;
  // KOLO_* variables that name no known setting (likely typos), to warn about once.
  std::vector<std::string> unknown_variables;

  // Throws InvalidArgument naming the variable and the bad value.
  static Config from_env(const EnvLookup& lookup, const std::vector<std::string>& all_names);
  static Config from_process_env();
};

}  // namespace kolo::core
