#include "backends/backend_choice.h"

#include <gtest/gtest.h>

#include "backends/mpi_plugin.h"
#include "base/errors.h"

namespace kolo::backends {
namespace {

TEST(ParseCpuOperations, NamesAndErrors) {
  EXPECT_EQ(parse_cpu_operations("", "X"), CpuOperations::kolo);
  EXPECT_EQ(parse_cpu_operations("gloo", "X"), CpuOperations::kolo);
  EXPECT_EQ(parse_cpu_operations("Mpi", "X"), CpuOperations::mpi);
  EXPECT_EQ(cpu_operations_name(CpuOperations::mpi), "mpi");
  EXPECT_EQ(cpu_operations_name(CpuOperations::kolo), "gloo");
  EXPECT_THROW((void)parse_cpu_operations("nccl", "HOROVOD_CPU_OPERATIONS"), InvalidArgument);
}

TEST(MpiPluginCandidates, AnExplicitPathIsTheOnlyOneTried) {
  ::setenv("KOLO_MPI_PLUGIN", "/nonexistent/libkolo_mpi.so", 1);
  EXPECT_EQ(mpi_plugin_candidates(), std::vector<std::string>{"/nonexistent/libkolo_mpi.so"});
  ::unsetenv("KOLO_MPI_PLUGIN");
  // Otherwise: beside the binary holding this code (libkolo.so when installed).
  const auto candidates = mpi_plugin_candidates();
  ASSERT_FALSE(candidates.empty());
  EXPECT_NE(candidates.front().find(kMpiPluginFile), std::string::npos);
}

}  // namespace
}  // namespace kolo::backends
