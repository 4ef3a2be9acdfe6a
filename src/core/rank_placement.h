// The rank's side of the default placement, run once the rank knows its place on the host (local
// rank and size) and before the background thread starts: restricts the rank's threads to its
// share of the job's cores (placement/rank_plan.h decides), so the background thread, the
// framework's threads and DataLoader workers started later stay inside it (they inherit the mask).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/logger.h"
#include "core/config.h"

namespace kolo::core {

struct RankPlacement {
  std::vector<int> cpus;       // the CPUs this rank's threads may use now
  std::vector<int> job_cpus;   // the CPUs the job may use on this host
  std::optional<int> threads;  // the framework's default thread count to set (python/kolo)
  std::string summary;         // one line saying what was done
  int host_cpus = 0;           // for CommunicatorOptions::host_cpus (0: the machine's)
};

// Decides and applies: moves every thread whose mask is the job's (threads placed deliberately,
// by the user or a framework, keep theirs). The job's CPUs are JOB_CPUS when kolorun set it, else
// the mask of the kolorun that started this process on this host (a `taskset` wrapper around one
// rank narrows the rank's mask, not the job's), else the calling thread's mask the first time
// this runs in the process (a second init, after an elastic reset or shutdown, must not take its
// own share for the job's). Throws SystemError when the kernel refuses the share.
RankPlacement place_rank(const Config& config, const EnvLookup& lookup, int local_rank,
                         int local_size, const Logger& logger);

}  // namespace kolo::core
