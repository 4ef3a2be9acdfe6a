// Reading a Slurm allocation from the environment Slurm gives every job step, so that
// `kolorun python train.py` inside `salloc`/`sbatch` runs on the allocation's nodes without -H.
// Pure functions over strings (standard library and base/ only), so code outside the launcher
// (ranks started by `srun` without kolorun) can reuse them.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/env.h"

namespace kolo::launcher {

// More nodes than any Slurm cluster has (the largest run about 10,000): a node list or task list
// that expands beyond this is refused, so a few bytes of text ("n[0-999][0-999][0-999]") cannot
// make the launcher build billions of names.
inline constexpr size_t kMaxSlurmNodes = 100000;

// Expands a Slurm host list: "node[01-03,07],gpu5" -> node01 node02 node03 node07 gpu5. Ranges
// keep the zero padding of their first bound; several bracket groups in one name multiply
// ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2). Throws kolo::InvalidArgument naming the bad part
// (unbalanced bracket, reversed or non-numeric range, more than kMaxSlurmNodes names).
std::vector<std::string> expand_slurm_nodelist(std::string_view nodelist);

// Expands SLURM_TASKS_PER_NODE: "2(x3),1" -> 2 2 2 1. Throws kolo::InvalidArgument, also for more
// than kMaxSlurmNodes entries.
std::vector<int> expand_slurm_tasks_per_node(std::string_view text);

struct SlurmNode {
  std::string name;
  int tasks = 0;
  bool operator==(const SlurmNode&) const = default;
};

struct SlurmAllocation {
  std::vector<SlurmNode> nodes;  // in Slurm's order
  std::optional<int> ntasks;     // SLURM_NTASKS (SLURM_NPROCS), when set
};

// The allocation described by SLURM_JOB_NODELIST (else SLURM_NODELIST), or nullopt outside Slurm.
// Tasks per node are `slots_per_host` (kolorun's --slots-per-host) when given, else
// SLURM_TASKS_PER_NODE, else SLURM_NTASKS_PER_NODE, else 1. Throws kolo::InvalidArgument naming the
// variable when one is malformed or the counts do not match the nodes.
std::optional<SlurmAllocation> slurm_allocation(const EnvLookup& env,
                                                std::optional<int> slots_per_host);

}  // namespace kolo::launcher
