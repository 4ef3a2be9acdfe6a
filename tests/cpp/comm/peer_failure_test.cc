// Faults: a rank that dies mid-collective is named by every survivor, neighbour or not, within a
// short bound; a silent rank is named after peer_timeout; a peer that sent its last bytes and
// exited cleanly is not an error until someone needs more from it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "base/errors.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"

namespace kolo::comm {
namespace {

using namespace std::chrono_literals;
using testing::peer_of;
using testing::RankThreads;
using testing::seconds_since;

class RankDiesMidAllreduce : public ::testing::TestWithParam<AllreduceAlgorithm> {};

TEST_P(RankDiesMidAllreduce, EverySurvivorNamesItQuickly) {
  CommunicatorOptions options = testing::default_test_options();
  options.peer_timeout = 5s;  // hangup detection must not rely on the timeout
  RankThreads group(4, options);
  std::vector<float> data[4];
  std::atomic<int64_t> died_at_ns{0};
  std::vector<double> failed_after(4, -1.0);
  const auto errors = group.run_collect(
      [&](Communicator& comm) {
        const int r = comm.rank();
        data[r].assign(1000, 1.0f);
        const int rounds = r == 0 ? 3 : 4;  // rank 0 leaves after three allreduces
        for (int i = 0; i < rounds; ++i) {
          try {
            allreduce(comm, std::as_writable_bytes(std::span(data[r])), data[r].size(),
                      DataType::float32, ReduceOp::sum, {GetParam(), 0});
          } catch (...) {
            failed_after[r] =
                (std::chrono::steady_clock::now().time_since_epoch().count() - died_at_ns.load()) /
                1e9;
            throw;
          }
        }
        if (r == 0) {
          std::this_thread::sleep_for(100ms);  // the others are blocked in the next allreduce
          died_at_ns = std::chrono::steady_clock::now().time_since_epoch().count();
          comm.abort();
        }
      },
      /*abort_on_error=*/false);  // only rank 0 closes: every error must name rank 0
  EXPECT_FALSE(errors[0]);
  for (int r = 1; r < 4; ++r) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " did not fail";
    EXPECT_EQ(peer_of(errors[r]), 0) << "rank " << r << ": " << testing::describe(errors[r]);
    EXPECT_NE(testing::describe(errors[r]).find("rank 0 (socketpair) closed the connection"),
              std::string::npos)
        << "rank " << r << ": " << testing::describe(errors[r]);
    EXPECT_LT(failed_after[r], 2.0) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, RankDiesMidAllreduce,
                         ::testing::Values(AllreduceAlgorithm::ring,
                                           AllreduceAlgorithm::recursive_doubling));

TEST(PeerFailure, SilentRankIsNamedAfterPeerTimeout) {
  CommunicatorOptions options = testing::default_test_options();
  options.peer_timeout = 500ms;
  RankThreads group(3, options);
  const auto start = std::chrono::steady_clock::now();
  std::vector<double> failed_at(3, -1.0);
  const auto errors = group.run_collect(
      [&](Communicator& comm) {
        if (comm.rank() == 2) return;  // never joins
        std::vector<float> data(1000, 1.0f);
        try {
          allreduce_ring(comm, std::as_writable_bytes(std::span(data)), data.size(),
                         DataType::float32, ReduceOp::sum);
        } catch (...) {
          failed_at[comm.rank()] = seconds_since(start);
          throw;
        }
      },
      /*abort_on_error=*/false);
  // Rank 0 receives from rank 2 in the ring: it must name rank 2.
  ASSERT_TRUE(errors[0]);
  EXPECT_EQ(peer_of(errors[0]), 2) << testing::describe(errors[0]);
  EXPECT_NE(testing::describe(errors[0]).find("no progress from rank 2 (socketpair)"),
            std::string::npos)
      << testing::describe(errors[0]);
  EXPECT_NE(testing::describe(errors[0]).find("500 ms"), std::string::npos);
  EXPECT_GE(failed_at[0], 0.45);
  EXPECT_LT(failed_at[0], 3.0);
  ASSERT_TRUE(errors[1]);
  EXPECT_GE(peer_of(errors[1]), 0) << testing::describe(errors[1]);
}

TEST(PeerFailure, PeerGoneWhileWeOnlySend) {
  RankThreads group(2);
  const auto start = std::chrono::steady_clock::now();
  const auto errors = group.run_collect(
      [&](Communicator& comm) {
        if (comm.rank() == 1) {
          std::this_thread::sleep_for(100ms);
          comm.abort();
          return;
        }
        std::vector<std::byte> big(32u << 20);
        comm.send(1, big);
      },
      false);
  ASSERT_TRUE(errors[0]);
  EXPECT_EQ(peer_of(errors[0]), 1) << testing::describe(errors[0]);
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST(PeerFailure, CleanExitAfterLastDataIsNotAnErrorUntilMoreIsNeeded) {
  RankThreads group(3);
  std::atomic<int> stage{0};
  const auto errors = group.run_collect(
      [&](Communicator& comm) {
        std::vector<std::byte> small(100, std::byte{7}), large(1000, std::byte{9});
        if (comm.rank() == 1) {  // says its last word and leaves
          comm.send(0, small);
          comm.abort();
        } else if (comm.rank() == 2) {  // slow: rank 0 waits on it while rank 1 hangs up
          std::this_thread::sleep_for(200ms);
          comm.send(0, large);
        } else {
          std::vector<std::byte> in(1000);
          comm.recv(2, in);
          EXPECT_TRUE(in == large);
          stage = 1;
          std::vector<std::byte> last(100);
          comm.recv(1, last);
          EXPECT_TRUE(last == small);
          stage = 2;
          std::byte more{};
          comm.recv(1, {&more, 1});
          stage = 3;
        }
      },
      false);
  EXPECT_EQ(stage.load(), 2);
  ASSERT_TRUE(errors[0]);
  EXPECT_EQ(peer_of(errors[0]), 1) << testing::describe(errors[0]);
  EXPECT_FALSE(errors[1]);
  EXPECT_FALSE(errors[2]);
}

}  // namespace
}  // namespace kolo::comm
