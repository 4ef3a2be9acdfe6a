#include "launcher/hosts/slurm.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "base/errors.h"
#include "launcher/launcher_test_util.h"

namespace kolo::launcher {
namespace {

using Names = std::vector<std::string>;

using testing::error_of;

using testing::env_of;

TEST(SlurmNodelist, PlainNamesAndBracketRanges) {
  EXPECT_EQ(expand_slurm_nodelist("gpu5"), (Names{"gpu5"}));
  EXPECT_EQ(expand_slurm_nodelist("node[01-03,07],gpu5"),
            (Names{"node01", "node02", "node03", "node07", "gpu5"}));
  EXPECT_EQ(expand_slurm_nodelist("n[8-11]"), (Names{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(expand_slurm_nodelist("n[098-101]"), (Names{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand_slurm_nodelist("rack[1-2]-n[1-2]"),
            (Names{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}));
  EXPECT_EQ(expand_slurm_nodelist("a[3],b"), (Names{"a3", "b"}));
  EXPECT_EQ(expand_slurm_nodelist("10.0.0.[2-3]"), (Names{"10.0.0.2", "10.0.0.3"}));
}

TEST(SlurmNodelist, MalformedListsNameTheProblem) {
  EXPECT_NE(error_of([] { expand_slurm_nodelist("node[01-03"); }).find("unbalanced"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_slurm_nodelist("node01]"); }).find("unbalanced"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_slurm_nodelist("node[3-1]"); }).find("bad range '3-1'"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_slurm_nodelist("node[a-b]"); }).find("bad range 'a-b'"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_slurm_nodelist("a,,b"); }).find("empty name"), std::string::npos);
}

TEST(SlurmTasksPerNode, RepeatsExpand) {
  EXPECT_EQ(expand_slurm_tasks_per_node("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(expand_slurm_tasks_per_node("4"), (std::vector<int>{4}));
  EXPECT_EQ(expand_slurm_tasks_per_node("1,3(x2)"), (std::vector<int>{1, 3, 3}));
  EXPECT_NE(error_of([] { expand_slurm_tasks_per_node("2(x)"); }).find("bad repeat '2(x)'"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_slurm_tasks_per_node("two"); }).find("bad task count 'two'"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_slurm_tasks_per_node("0"); }).find("bad task count"),
            std::string::npos);
}

TEST(SlurmAllocationFromEnv, NodesTasksAndNtasks) {
  EXPECT_FALSE(slurm_allocation(env_of({}), std::nullopt).has_value());

  auto allocation = slurm_allocation(env_of({{"SLURM_JOB_NODELIST", "node[01-03],gpu7"},
                                             {"SLURM_TASKS_PER_NODE", "2(x3),1"},
                                             {"SLURM_NTASKS", "7"}}),
                                     std::nullopt);
  ASSERT_TRUE(allocation.has_value());
  EXPECT_EQ(allocation->nodes,
            (std::vector<SlurmNode>{{"node01", 2}, {"node02", 2}, {"node03", 2}, {"gpu7", 1}}));
  EXPECT_EQ(allocation->ntasks, 7);

  // SLURM_NTASKS_PER_NODE when there is no per-node list; an explicit --slots-per-host wins.
  allocation = slurm_allocation(
      env_of({{"SLURM_NODELIST", "a[1-2]"}, {"SLURM_NTASKS_PER_NODE", "4"}}), std::nullopt);
  EXPECT_EQ(allocation->nodes, (std::vector<SlurmNode>{{"a1", 4}, {"a2", 4}}));
  EXPECT_FALSE(allocation->ntasks.has_value());
  allocation = slurm_allocation(
      env_of({{"SLURM_JOB_NODELIST", "a[1-2]"}, {"SLURM_TASKS_PER_NODE", "4(x2)"}}), 1);
  EXPECT_EQ(allocation->nodes, (std::vector<SlurmNode>{{"a1", 1}, {"a2", 1}}));
  allocation = slurm_allocation(env_of({{"SLURM_JOB_NODELIST", "a1"}}), std::nullopt);
  EXPECT_EQ(allocation->nodes, (std::vector<SlurmNode>{{"a1", 1}}));
}

TEST(SlurmAllocationFromEnv, InconsistentVariablesAreNamed) {
  std::string error = error_of([] {
    slurm_allocation(env_of({{"SLURM_JOB_NODELIST", "a[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}}),
                     std::nullopt);
  });
  EXPECT_NE(error.find("SLURM_TASKS_PER_NODE='2(x2)' describes 2 node(s)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("has 3"), std::string::npos) << error;
  error = error_of([] {
    slurm_allocation(env_of({{"SLURM_JOB_NODELIST", "a"}, {"SLURM_NTASKS", "many"}}), std::nullopt);
  });
  EXPECT_NE(error.find("SLURM_NTASKS='many'"), std::string::npos) << error;
  error = error_of([] {
    slurm_allocation(env_of({{"SLURM_JOB_NODELIST", "a"}, {"SLURM_NTASKS_PER_NODE", "-1"}}),
                     std::nullopt);
  });
  EXPECT_NE(error.find("SLURM_NTASKS_PER_NODE='-1'"), std::string::npos) << error;
}

// Found by fuzz/slurm_fuzzer.cc: bracket groups multiply, so 30 bytes of node list named 4.5
// million nodes and the launcher spent its time building them. Lists beyond kMaxSlurmNodes are
// refused at once, naming the list; a list of exactly that many still expands.
TEST(SlurmNodelist, ExpansionIsBounded) {
  EXPECT_NE(error_of([] {
              expand_slurm_nodelist("gpq[0-405]u[3-108]R[3-108]");
            }).find("Slurm node list 'gpq[0-405]u[3-108]R[3-108]' names more than 100000 nodes"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              expand_slurm_nodelist("n[0-999][0-999][0-999][0-999]");
            }).find("more than 100000 nodes"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_slurm_nodelist("n[0-99999999]"); }).find("more than 100000"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_slurm_nodelist("a[0-60000],b[0-60000]"); }).find("more than"),
            std::string::npos);
  EXPECT_EQ(expand_slurm_nodelist("n[0-99][0-999]").size(), kMaxSlurmNodes);
  EXPECT_NE(error_of([] {
              expand_slurm_tasks_per_node("1(x60000),2(x60000)");
            }).find("describes more than 100000 nodes"),
            std::string::npos);
  EXPECT_EQ(expand_slurm_tasks_per_node("1(x50000),2(x50000)").size(), kMaxSlurmNodes);
}

}  // namespace
}  // namespace kolo::launcher
