// What one rank does about its CPUs at init, decided from what the launcher already did: the
// rank's side of the default placement (core_share.h), for ranks that kolorun did not place
// itself (an mpirun or srun that did not bind, a kolorun without placement).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "placement/core_share.h"

namespace kolo::placement {

// BIND_TO (KOLO_BIND_TO, HOROVOD_BIND_TO, kolorun --bind-to): "core" (the default, each local
// rank its own share of the job's cores) or "none" (ranks keep the launcher's mask).
enum class BindTo { core, none };
// Throws InvalidArgument naming `what` and the accepted values for anything else.
BindTo parse_bind_to(const std::string& text, const std::string& what);

struct RankPlanInput {
  BindTo bind_to = BindTo::core;
  // CPU_SHARE, set by kolorun for a rank it placed itself: nothing is left to do.
  std::optional<std::vector<int>> launcher_share;
  // An MPI launcher or srun bound the rank (OMPI_MCA_orte_bound_at_launch,
  // SLURM_CPU_BIND_TYPE): its choice stands.
  std::optional<std::string> bound_by;
  std::vector<Cpu> job_cpus;  // the CPUs the whole job may use on this host
  // The mask this rank began with: narrower than the job's, someone placed the rank before init
  // (a `taskset` wrapper per rank) and that choice stands.
  std::vector<int> own_mask;
  int local_rank = 0;
  int local_size = 1;
};

struct RankPlan {
  std::optional<std::vector<int>> restrict_to;  // move the rank's threads to these CPUs
  // The rank's default thread count (the framework's unless the user chose one; kolorun puts it
  // in OMP_NUM_THREADS, the rank's init in torch.set_num_threads); nullopt: placement is off.
  std::optional<int> threads;
  std::string summary;  // one line: what was done, for the log and kolo's placement()
  // Whether the host's ranks outnumber its CPUs is judged against this many CPUs: the job's,
  // or 0 (the machine's) when a launcher bound the ranks and the job's mask is unknown.
  int host_cpus = 0;
};

RankPlan plan_rank(const RankPlanInput& input);

}  // namespace kolo::placement
