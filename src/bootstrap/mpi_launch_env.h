// Rank, size and local rank of a process started by an MPI-style launcher rather than kolorun:
// Open MPI's mpirun (OMPI_COMM_WORLD_*), MPICH/Intel MPI's hydra (PMI_RANK, PMI_SIZE,
// MPI_LOCALRANKID) and Slurm's srun (SLURM_PROCID, SLURM_STEP_NUM_TASKS or SLURM_NTASKS,
// SLURM_LOCALID). Such a rank has no rendezvous address; it gets one over MPI (mpi_bootstrap.h).
#pragma once

#include <optional>
#include <string>

#include "base/env.h"

namespace kolo::bootstrap {

struct MpiLaunchEnv {
  int rank = 0;
  int size = 1;
  int local_rank = -1;  // -1: the launcher did not say
  int local_size = -1;
  std::string size_variable;  // the variable the size came from, e.g. "OMPI_COMM_WORLD_SIZE"
};

// The first launcher whose variables are present, in the order above; nullopt when none is.
// Throws InvalidArgument naming the variable when a value is not a number or the rank is
// outside the size.
std::optional<MpiLaunchEnv> detect_mpi_launch_env(const EnvLookup& lookup);

}  // namespace kolo::bootstrap
