#include "placement/cpu_topology.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kolo::placement {
namespace {

namespace fs = std::filesystem;

// A sysfs-like folder: cpuN/topology/{physical_package_id,core_id}.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kolo-topology-" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void add(int cpu, int package, int core) {
    const fs::path topology = root_ / ("cpu" + std::to_string(cpu)) / "topology";
    fs::create_directories(topology);
    std::ofstream(topology / "physical_package_id") << package << "\n";
    std::ofstream(topology / "core_id") << core << "\n";
  }
  fs::path root_;
};

TEST_F(FakeSysfs, SiblingsShareACoreAndPackagesTellCoresApart) {
  add(0, 0, 0);
  add(1, 0, 1);
  add(2, 1, 0);  // core 0 of the second package: not core 0 of the first
  add(3, 0, 0);  // cpu 0's sibling
  const auto cpus = describe_cpus({0, 1, 2, 3}, root_.string());
  ASSERT_EQ(cpus.size(), 4u);
  EXPECT_EQ(cpus[0].core, cpus[3].core);
  EXPECT_NE(cpus[0].core, cpus[1].core);
  EXPECT_NE(cpus[0].core, cpus[2].core);
  EXPECT_NE(cpus[1].core, cpus[2].core);
  EXPECT_EQ(share_for_local_rank(cpus, 0, 3).cpus, (std::vector<int>{0, 3}));
}

TEST_F(FakeSysfs, MissingFilesMakeEachCpuItsOwnCore) {
  add(0, 0, 0);
  const auto cpus = describe_cpus({0, 5, 6}, root_.string());
  ASSERT_EQ(cpus.size(), 3u);
  EXPECT_NE(cpus[1].core, cpus[2].core);
  EXPECT_NE(cpus[0].core, cpus[1].core);
  EXPECT_EQ(share_for_local_rank(cpus, 1, 3).cpus, (std::vector<int>{5}));
}

}  // namespace
}  // namespace kolo::placement
