// barrier: nobody leaves before everybody arrived, repeatedly, on 1..6 ranks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "comm/collectives.h"
#include "comm/rank_threads.h"

namespace kolo::comm {
namespace {

using testing::RankThreads;

class Barrier : public ::testing::TestWithParam<int> {};

TEST_P(Barrier, NobodyLeavesEarly) {
  const int n = GetParam();
  const int rounds = 20;
  RankThreads group(n);
  std::vector<std::atomic<int>> arrived(rounds);
  group.run([&](Communicator& comm) {
    for (int round = 0; round < rounds; ++round) {
      // A different late rank each round.
      if (comm.rank() == round % n) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      arrived[round].fetch_add(1);
      barrier(comm);
      EXPECT_EQ(arrived[round].load(), n) << "rank " << comm.rank() << " round " << round;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Sizes, Barrier, ::testing::Range(1, 7));

}  // namespace
}  // namespace kolo::comm
