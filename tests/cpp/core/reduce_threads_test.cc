// REDUCE_THREADS: the setting's parsing, the auto count from the rank's share, and
// core::ReduceHelpers handing its helpers to a communicator and taking them back.
#include "core/reduce_threads.h"

#include <gtest/gtest.h>

#include "base/errors.h"
#include "base/fake_env.h"
#include "comm/rank_threads.h"
#include "core/config.h"

namespace kolo::core {
namespace {

TEST(ReduceThreads, SettingIsAWholeCountUnderEitherName) {
  EXPECT_EQ(Config::from_env(env_of({}), {}).reduce_threads, 0);
  const Config kolo =
      Config::from_env(env_of({{"KOLO_REDUCE_THREADS", "3"}}), {"KOLO_REDUCE_THREADS"});
  EXPECT_EQ(kolo.reduce_threads, 3);
  EXPECT_TRUE(kolo.unknown_variables.empty());
  EXPECT_EQ(Config::from_env(env_of({{"HOROVOD_REDUCE_THREADS", "1"}}), {}).reduce_threads, 1);
  for (const char* bad : {"-1", "2.5", "four", "65"}) {
    try {
      (void)Config::from_env(env_of({{"KOLO_REDUCE_THREADS", bad}}), {});
      ADD_FAILURE() << "accepted KOLO_REDUCE_THREADS='" << bad << "'";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("KOLO_REDUCE_THREADS='" + std::string(bad) + "'"),
                std::string::npos)
          << error.what();
    }
  }
}

TEST(ReduceThreads, AutoFollowsTheRanksShare) {
  // setting, physical cores of the share (nullopt: no placement), CPUs of the calling thread,
  // local ranks.
  EXPECT_EQ(reduce_threads_for(0, 1, 1, 2), 1);    // this machine at np 2: a core per rank
  EXPECT_EQ(reduce_threads_for(0, 2, 2, 1), 2);    // np 1 on 2 cores
  EXPECT_EQ(reduce_threads_for(0, 8, 16, 1), 4);   // a GPU rank alone on 16 CPUs: capped
  EXPECT_EQ(reduce_threads_for(0, 8, 1, 1), 1);    // THREAD_AFFINITY pinned the thread
  EXPECT_EQ(reduce_threads_for(0, {}, 16, 2), 4);  // not placed (bind-to none): half each
  EXPECT_EQ(reduce_threads_for(0, {}, 2, 2), 1);
  EXPECT_EQ(reduce_threads_for(0, {}, 3, 1), 3);
  EXPECT_EQ(reduce_threads_for(3, 1, 1, 2), 3);  // a setting is taken as it is
  EXPECT_EQ(reduce_threads_for(1, 8, 16, 1), 1);
}

TEST(ReduceThreads, HelpersAreLentToTheCommunicatorUntilDestroyed) {
  comm::testing::RankThreads group(2);
  const Logger logger(LogLevel::warning, "[test]");
  Config config;
  RankPlacement placement;
  config.reduce_threads = 3;
  group.run([&](comm::Communicator& comm) {
    {
      const ReduceHelpers helpers(config, placement, 2, comm, logger);
      EXPECT_EQ(helpers.threads(), 3u);
      ASSERT_NE(comm.work_splitter(), nullptr);
      EXPECT_EQ(comm.work_splitter()->threads(), 3u);
    }
    EXPECT_EQ(comm.work_splitter(), nullptr) << "the communicator kept joined helpers";
  });
  config.reduce_threads = 1;
  group.run([&](comm::Communicator& comm) {
    const ReduceHelpers helpers(config, placement, 2, comm, logger);
    EXPECT_EQ(helpers.threads(), 1u);
    EXPECT_EQ(comm.work_splitter(), nullptr);
  });
}

}  // namespace
}  // namespace kolo::core
