// kolorun's side of the default placement (docs/guide/placement.md): each rank it starts on this
// host begins on its own share of the CPUs kolorun may use (kolorun's own mask: a container's, a
// Slurm cgroup's, a taskset's), so every thread the rank ever has, from the interpreter's first
// to its DataLoader workers, starts inside it, and torch reads its thread count from
// OMP_NUM_THREADS at start. The rank learns what was done from KOLO_CPU_SHARE and KOLO_JOB_CPUS
// (core/rank_placement.h does the rest, and all of it for ranks kolorun does not start itself:
// remote hosts, elastic workers, whose local rank changes from round to round).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/hosts/hosts.h"
#include "launcher/spawn/rank_environment.h"
#include "placement/core_share.h"

namespace kolo::launcher {

struct RankCpus {
  std::optional<std::vector<int>> cpus;  // start the rank restricted to these (nullopt: as is)
  Environment additions;                 // KOLO_JOB_CPUS, KOLO_CPU_SHARE, OMP_NUM_THREADS
};

class LocalPlacement {
 public:
  // The job's CPUs: kolorun's own mask, read now (before any spawn narrows a thread's).
  LocalPlacement();
  explicit LocalPlacement(std::vector<placement::Cpu> job_cpus);

  // What the rank at `slot` gets, given its environment: BIND_TO=none, an elastic worker
  // (KOLO_ELASTIC=1) and a user's OMP_NUM_THREADS are respected. Throws InvalidArgument for a
  // bad BIND_TO, naming the variable.
  [[nodiscard]] RankCpus for_rank(const SlotAssignment& slot, const Environment& env) const;

  // The job header's line for `local_size` ranks of this host with this environment.
  [[nodiscard]] std::string describe(int local_size, const Environment& env) const;

 private:
  std::vector<placement::Cpu> job_cpus_;
};

}  // namespace kolo::launcher
