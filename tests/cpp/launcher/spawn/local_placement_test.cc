#include "launcher/spawn/local_placement.h"

#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"

namespace kolo::launcher {
namespace {

LocalPlacement on_cpus(int count) {
  std::vector<placement::Cpu> cpus;
  for (int id = 0; id < count; ++id) cpus.push_back({id, id});
  return LocalPlacement(cpus);
}

SlotAssignment slot(int local_rank, int local_size) {
  SlotAssignment slot;
  slot.host = "localhost";
  slot.rank = local_rank;
  slot.local_rank = local_rank;
  slot.local_size = local_size;
  return slot;
}

TEST(LocalPlacement, EachRankStartsOnItsShareWithItsThreadCount) {
  const RankCpus cpus = on_cpus(4).for_rank(slot(1, 2), {});
  ASSERT_TRUE(cpus.cpus);
  EXPECT_EQ(*cpus.cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(
      cpus.additions,
      (Environment{{"KOLO_JOB_CPUS", "0-3"}, {"KOLO_CPU_SHARE", "2-3"}, {"OMP_NUM_THREADS", "2"}}));
}

TEST(LocalPlacement, TheUsersThreadCountStays) {
  const RankCpus cpus = on_cpus(4).for_rank(slot(0, 2), {{"OMP_NUM_THREADS", "8"}});
  EXPECT_FALSE(cpus.additions.contains("OMP_NUM_THREADS"));
  EXPECT_EQ(cpus.additions.at("KOLO_CPU_SHARE"), "0-1");
}

TEST(LocalPlacement, OversubscribedRanksStartUnboundWithOneThread) {
  const RankCpus cpus = on_cpus(2).for_rank(slot(2, 3), {});
  EXPECT_FALSE(cpus.cpus);
  EXPECT_EQ(cpus.additions, (Environment{{"KOLO_JOB_CPUS", "0-1"}, {"OMP_NUM_THREADS", "1"}}));
}

TEST(LocalPlacement, BindToNoneAndElasticWorkersAreLeftToTheRank) {
  for (const Environment& env :
       {Environment{{"KOLO_BIND_TO", "none"}}, Environment{{"HOROVOD_BIND_TO", "none"}},
        Environment{{"KOLO_ELASTIC", "1"}}}) {
    const RankCpus cpus = on_cpus(4).for_rank(slot(0, 2), env);
    EXPECT_FALSE(cpus.cpus);
    EXPECT_EQ(cpus.additions, (Environment{{"KOLO_JOB_CPUS", "0-3"}}));
  }
}

TEST(LocalPlacement, ABadBindToNamesTheVariable) {
  try {
    (void)on_cpus(4).for_rank(slot(0, 2), {{"KOLO_BIND_TO", "socket"}});
    ADD_FAILURE() << "socket accepted";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("KOLO_BIND_TO='socket'"), std::string::npos);
  }
}

TEST(LocalPlacement, TheHeaderLineSaysWhatWasDone) {
  EXPECT_EQ(on_cpus(4).describe(2, {}),
            "placement: 2 local rank(s) on their own share of CPUs 0-3 (--bind-to none turns it "
            "off): 0-1 2-3");
  EXPECT_NE(on_cpus(2).describe(3, {}).find("not bound (more ranks than CPUs)"), std::string::npos);
  EXPECT_NE(on_cpus(2).describe(2, {{"KOLO_BIND_TO", "none"}}).find("bind-to none"),
            std::string::npos);
}

}  // namespace
}  // namespace kolo::launcher
