// Rank, size and local rank of a process started by mpirun, hydra or srun, and how LaunchInfo
// uses them.
#include "bootstrap/mpi_launch_env.h"

#include <gtest/gtest.h>

#include "base/errors.h"
#include "base/fake_env.h"
#include "bootstrap/launch_info.h"

namespace kolo::bootstrap {
namespace {

TEST(MpiLaunchEnv, OpenMpi) {
  auto found = detect_mpi_launch_env(env_of({{"OMPI_COMM_WORLD_RANK", "2"},
                                             {"OMPI_COMM_WORLD_SIZE", "4"},
                                             {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                             {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->rank, 2);
  EXPECT_EQ(found->size, 4);
  EXPECT_EQ(found->local_rank, 0);
  EXPECT_EQ(found->local_size, 2);
  EXPECT_EQ(found->size_variable, "OMPI_COMM_WORLD_SIZE");
}

TEST(MpiLaunchEnv, HydraPmi) {
  auto found = detect_mpi_launch_env(
      env_of({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}, {"MPI_LOCALRANKID", "1"}}));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->rank, 1);
  EXPECT_EQ(found->size, 3);
  EXPECT_EQ(found->local_rank, 1);
  EXPECT_EQ(found->local_size, -1);
}

TEST(MpiLaunchEnv, SlurmStepSizeWinsOverTheAllocations) {
  auto found = detect_mpi_launch_env(env_of({{"SLURM_PROCID", "5"},
                                             {"SLURM_NTASKS", "16"},
                                             {"SLURM_STEP_NUM_TASKS", "8"},
                                             {"SLURM_LOCALID", "1"}}));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->size, 8);
  EXPECT_EQ(found->size_variable, "SLURM_STEP_NUM_TASKS");
  EXPECT_EQ(found->local_rank, 1);
  found = detect_mpi_launch_env(env_of({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}}));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->size, 16);
}

TEST(MpiLaunchEnv, OpenMpiWinsOverSlurmWhenMpirunRunsInsideAnAllocation) {
  auto found = detect_mpi_launch_env(env_of({{"SLURM_PROCID", "0"},
                                             {"SLURM_NTASKS", "1"},
                                             {"OMPI_COMM_WORLD_RANK", "1"},
                                             {"OMPI_COMM_WORLD_SIZE", "2"}}));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->rank, 1);
  EXPECT_EQ(found->size, 2);
}

TEST(MpiLaunchEnv, NoneOrBadValues) {
  EXPECT_FALSE(detect_mpi_launch_env(env_of({{"PATH", "/bin"}})));
  EXPECT_THROW((void)detect_mpi_launch_env(
                   env_of({{"OMPI_COMM_WORLD_RANK", "x"}, {"OMPI_COMM_WORLD_SIZE", "2"}})),
               InvalidArgument);
  EXPECT_THROW((void)detect_mpi_launch_env(
                   env_of({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}})),
               InvalidArgument);
  EXPECT_THROW((void)detect_mpi_launch_env(env_of({{"PMI_RANK", "0"}})), InvalidArgument);
}

TEST(LaunchInfoFromMpirun, NeedsTheRendezvousOverMpi) {
  LaunchInfo info = LaunchInfo::from_env(env_of({{"OMPI_COMM_WORLD_RANK", "1"},
                                                 {"OMPI_COMM_WORLD_SIZE", "3"},
                                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.size, 3);
  EXPECT_TRUE(info.rendezvous_over_mpi);
  EXPECT_EQ(info.launcher_local_rank, 1);
  EXPECT_EQ(info.mpi_size_variable, "OMPI_COMM_WORLD_SIZE");
  EXPECT_TRUE(info.rendezvous_addr.empty());
}

TEST(LaunchInfoFromMpirun, KolorunsVariablesWin) {
  LaunchInfo info = LaunchInfo::from_env(env_of({{"OMPI_COMM_WORLD_RANK", "1"},
                                                 {"OMPI_COMM_WORLD_SIZE", "3"},
                                                 {"KOLO_RANK", "0"},
                                                 {"KOLO_SIZE", "2"},
                                                 {"KOLO_RENDEZVOUS_ADDR", "127.0.0.1"},
                                                 {"KOLO_RENDEZVOUS_PORT", "1234"}}));
  EXPECT_FALSE(info.rendezvous_over_mpi);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.size, 2);
}

TEST(LaunchInfoFromMpirun, OneRankIsAloneWithoutMpi) {
  LaunchInfo info =
      LaunchInfo::from_env(env_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}}));
  EXPECT_FALSE(info.rendezvous_over_mpi);
  EXPECT_EQ(info.size, 1);
}

}  // namespace
}  // namespace kolo::bootstrap
