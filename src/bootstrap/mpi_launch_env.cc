#include "bootstrap/mpi_launch_env.h"

#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#include "base/errors.h"

namespace kolo::bootstrap {

namespace {

struct LauncherVariables {
  const char* rank;
  std::vector<const char*> size;  // the first one present wins
  const char* local_rank;
  const char* local_size;
};

std::optional<int> read_int(const EnvLookup& lookup, const char* name) {
  if (name == nullptr) return std::nullopt;
  auto text = lookup(name);
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  const long value = std::strtol(text->c_str(), &end, 10);
  if (*end != '\0' || value < 0 || value > 1'000'000'000) {
    throw InvalidArgument(fmt::format("{}='{}' is not a non-negative integer", name, *text));
  }
  return static_cast<int>(value);
}

}  // namespace

std::optional<MpiLaunchEnv> detect_mpi_launch_env(const EnvLookup& lookup) {
  // srun sets SLURM_PROCID for each task it starts; SLURM_STEP_NUM_TASKS is the step's size
  // (SLURM_NTASKS, the allocation's, is the fallback for older Slurm).
  const LauncherVariables launchers[] = {
      {"OMPI_COMM_WORLD_RANK",
       {"OMPI_COMM_WORLD_SIZE"},
       "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"PMI_RANK", {"PMI_SIZE"}, "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
      {"SLURM_PROCID", {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}, "SLURM_LOCALID", nullptr},
  };
  for (const auto& launcher : launchers) {
    auto rank = read_int(lookup, launcher.rank);
    if (!rank) continue;
    MpiLaunchEnv found;
    std::optional<int> size;
    for (const char* name : launcher.size) {
      size = read_int(lookup, name);
      if (size) {
        found.size_variable = name;
        break;
      }
    }
    if (!size) {
      throw InvalidArgument(fmt::format("{} is set but {} is not: cannot tell the job's size",
                                        launcher.rank, launcher.size.front()));
    }
    if (*size < 1 || *rank >= *size) {
      throw InvalidArgument(fmt::format("{}={} is not within {}={}", launcher.rank, *rank,
                                        found.size_variable, *size));
    }
    found.rank = *rank;
    found.size = *size;
    found.local_rank = read_int(lookup, launcher.local_rank).value_or(-1);
    found.local_size = read_int(lookup, launcher.local_size).value_or(-1);
    return found;
  }
  return std::nullopt;
}

}  // namespace kolo::bootstrap
