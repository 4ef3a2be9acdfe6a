#include "placement/rank_plan.h"

#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"

namespace kolo::placement {
namespace {

RankPlanInput on_cpus(int count, int local_rank, int local_size) {
  RankPlanInput input;
  for (int id = 0; id < count; ++id) input.job_cpus.push_back(Cpu{id, id});
  input.local_rank = local_rank;
  input.local_size = local_size;
  return input;
}

TEST(RankPlan, ByDefaultEachRankTakesItsShare) {
  const RankPlan plan = plan_rank(on_cpus(4, 1, 2));
  ASSERT_TRUE(plan.restrict_to);
  EXPECT_EQ(*plan.restrict_to, (std::vector<int>{2, 3}));
  EXPECT_EQ(plan.threads, 2);
  EXPECT_NE(plan.summary.find("CPUs 2-3 of 0-3"), std::string::npos) << plan.summary;
}

TEST(RankPlan, OversubscribedBindsNothingButUsesOneThread) {
  const RankPlan plan = plan_rank(on_cpus(2, 2, 3));
  EXPECT_FALSE(plan.restrict_to);
  EXPECT_EQ(plan.threads, 1);
  EXPECT_NE(plan.summary.find("more ranks than CPUs"), std::string::npos) << plan.summary;
}

// Placement off for this rank: no thread moves, the thread count stays, the summary says why.
void expect_left_alone(const RankPlanInput& input, const std::string& why) {
  const RankPlan plan = plan_rank(input);
  EXPECT_FALSE(plan.restrict_to);
  EXPECT_FALSE(plan.threads);
  EXPECT_NE(plan.summary.find(why), std::string::npos) << plan.summary;
}

TEST(RankPlan, BindToNoneLeavesEverything) {
  RankPlanInput input = on_cpus(4, 0, 2);
  input.bind_to = BindTo::none;
  expect_left_alone(input, "bind-to none");
}

TEST(RankPlan, ALauncherThatBoundKeepsItsChoice) {
  RankPlanInput input = on_cpus(4, 0, 2);
  input.bound_by = "OMPI_MCA_orte_bound_at_launch=1";
  expect_left_alone(input, "OMPI_MCA_orte_bound_at_launch");
}

TEST(RankPlan, KolorunsShareIsTakenAsDone) {
  RankPlanInput input = on_cpus(4, 1, 2);
  input.launcher_share = std::vector<int>{2, 3};
  const RankPlan plan = plan_rank(input);
  EXPECT_FALSE(plan.restrict_to);
  EXPECT_EQ(plan.threads, 2);  // what kolorun put in OMP_NUM_THREADS unless the user had
  EXPECT_NE(plan.summary.find("placed by kolorun on CPUs 2-3 of 0-3"), std::string::npos);
}

// A `taskset` wrapper around each rank (the benchmarks' pinned launch) placed it already.
TEST(RankPlan, ARankPlacedBeforeInitKeepsItsMask) {
  RankPlanInput input = on_cpus(4, 1, 2);
  input.own_mask = {3};
  expect_left_alone(input, "placed before init on CPUs 3");
  EXPECT_EQ(plan_rank(input).host_cpus, 4);  // the job's: 2 ranks on 4 CPUs are not oversubscribed
  input.own_mask = {0, 1, 2, 3};             // the job's own mask: placed by kolo
  EXPECT_TRUE(plan_rank(input).restrict_to);
}

TEST(RankPlan, HostCpusAreTheJobsUnlessALauncherBound) {
  EXPECT_EQ(plan_rank(on_cpus(2, 2, 3)).host_cpus, 2);
  RankPlanInput input = on_cpus(1, 0, 2);
  input.bound_by = "SLURM_CPU_BIND_TYPE=mask_cpu:";
  EXPECT_EQ(plan_rank(input).host_cpus, 0);  // one rank's mask is not the job's
}

TEST(RankPlan, BindToParses) {
  EXPECT_EQ(parse_bind_to("core", "KOLO_BIND_TO"), BindTo::core);
  EXPECT_EQ(parse_bind_to("none", "KOLO_BIND_TO"), BindTo::none);
  try {
    parse_bind_to("socket", "HOROVOD_BIND_TO");
    ADD_FAILURE() << "socket accepted";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("HOROVOD_BIND_TO='socket'"), std::string::npos);
  }
}

}  // namespace
}  // namespace kolo::placement
