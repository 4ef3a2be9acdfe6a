// Allreduce through the host's shared-memory collective arena (threads as ranks, each with its
// own mapping of one arena): every dtype x op against an independent reference on 2, 3 and 4
// ranks for counts 0, 1, odd and several steps long (a small arena so both halves and both the
// fold-whole and sliced paths run), identical bits on every rank, the automatic choice by size,
// and a rank that leaves or stalls mid-allreduce named by every survivor.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <tuple>

#include "base/errors.h"
#include "comm/arena_fold_choice.h"
#include "comm/collective_arena.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"
#include "comm/subgroup.h"
#include "kernels/typed_values.h"

namespace kolo::comm {
namespace {

using namespace std::chrono_literals;
using testing::LinkKind;
using testing::RankThreads;

// Per slot half: above the 16 KiB a piece folds whole, so both paths run; 100003 floats take 13
// steps.
constexpr size_t kChunk = size_t{32} * 1024;

RankThreads arena_group(int size, size_t max_bytes = SIZE_MAX,
                        CommunicatorOptions options = testing::default_test_options()) {
  return RankThreads(std::vector<CommunicatorOptions>(static_cast<size_t>(size), options),
                     LinkKind::socket, size_t{64} * 1024, std::nullopt, kChunk, max_bytes);
}

class ArenaAllreduce : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(ArenaAllreduce, EveryTypeAndOpMatchesReference) {
  const auto [size, count] = GetParam();
  auto group = arena_group(size);
  for (const kernels::testing::ReferenceCase& c :
       kernels::testing::every_reference_case(size, count)) {
    group.run([&](Communicator& comm) {
      auto data = c.inputs[comm.rank()];
      allreduce(comm, data, count, c.type, c.op, {AllreduceAlgorithm::shared_memory});
      EXPECT_EQ(kernels::testing::first_difference(data, c.expected, c.type), "")
          << "rank " << comm.rank() << " " << dtype_name(c.type) << " " << reduce_op_name(c.op);
    });
  }
}

// 4095 floats fold whole in one step; 4100 (> 16 KiB) take the sliced path in one step; 100003
// run 13 steps, the last 1699 floats folded whole.
INSTANTIATE_TEST_SUITE_P(RanksAndCounts, ArenaAllreduce,
                         ::testing::Combine(::testing::Values(2, 3, 4),
                                            ::testing::Values(size_t{0}, size_t{1}, size_t{7},
                                                              size_t{4095}, size_t{4100},
                                                              size_t{100003})));

// Past 4 ranks (a CPU each) small steps take the sliced path once the others' values a rank
// would fold pass 48 KiB: at 8 ranks 1000 floats (3.9 KiB) fold whole, 2048 (8 KiB) and 4100 are
// sliced, 7 floats (fewer than one per rank) fold whole; every result matches the reference.
TEST(ArenaAllreduceManyRanks, BothFoldsAtEightRanksMatchReference) {
  CommunicatorOptions options = testing::default_test_options();
  options.host_cpus = 64;  // not oversubscribed, whatever this machine has
  auto group = arena_group(8, SIZE_MAX, options);
  for (const size_t count : {size_t{7}, size_t{1000}, size_t{2048}, size_t{4100}}) {
    for (const kernels::testing::ReferenceCase& c :
         kernels::testing::every_reference_case(8, count)) {
      if (c.type != DataType::float32 && c.type != DataType::int64) continue;
      group.run([&](Communicator& comm) {
        ASSERT_FALSE(comm.oversubscribed());
        auto data = c.inputs[comm.rank()];
        allreduce(comm, data, count, c.type, c.op, {AllreduceAlgorithm::shared_memory});
        EXPECT_EQ(kernels::testing::first_difference(data, c.expected, c.type), "")
            << "rank " << comm.rank() << " count " << count << " " << dtype_name(c.type) << " "
            << reduce_op_name(c.op);
      });
    }
  }
}

TEST(ArenaFoldChoice, WholeUpTo16KiBAtFourRanksThenWithinTheOthersBudget) {
  using detail::folds_whole;
  // 2 to 4 ranks, or an oversubscribed host: up to 16 KiB, as before.
  for (const int ranks : {2, 3, 4}) {
    EXPECT_TRUE(folds_whole(16384, 4096, ranks, false, 0)) << ranks;
    EXPECT_FALSE(folds_whole(16388, 4097, ranks, false, 0)) << ranks;
  }
  EXPECT_TRUE(folds_whole(8192, 2048, 16, true, 0));
  EXPECT_FALSE(folds_whole(16388, 4097, 16, true, 0));
  // More ranks with a CPU each: while (ranks - 1) x the step stays within 48 KiB.
  EXPECT_TRUE(folds_whole(6 * 1024, 1536, 8, false, 0));
  EXPECT_FALSE(folds_whole(8 * 1024, 2048, 8, false, 0));
  EXPECT_TRUE(folds_whole(3 * 1024, 768, 16, false, 0));
  EXPECT_FALSE(folds_whole(8 * 1024, 2048, 16, false, 0));
  EXPECT_TRUE(folds_whole(12 * 1024, 3072, 5, false, 0));
  EXPECT_FALSE(folds_whole(13 * 1024, 3328, 5, false, 0));
  // Fewer elements than ranks: whole, whatever is configured.
  EXPECT_TRUE(folds_whole(60, 15, 16, false, 0));
  EXPECT_TRUE(folds_whole(60, 15, 16, false, 8));
  // KOLO_SHM_FOLD_WHOLE_BYTES decides alone.
  EXPECT_TRUE(folds_whole(8192, 2048, 16, false, 16384));
  EXPECT_FALSE(folds_whole(8192, 2048, 2, false, 4096));
  EXPECT_TRUE(folds_whole(65536, 16384, 2, false, 65536));
}

class ArenaRounding : public ::testing::TestWithParam<int> {};

// Arbitrary floats: the sum is not exact, so what matters is that every rank gets the same bits
// and that they are the float64 sum up to rounding.
TEST_P(ArenaRounding, IdenticalBitsOnEveryRank) {
  const int size = GetParam();
  const size_t count = 50021;
  std::vector<std::vector<float>> inputs(static_cast<size_t>(size));
  std::vector<double> exact(count, 0.0);
  std::mt19937 random(42);
  std::uniform_real_distribution<float> value(-1e3f, 1e3f);
  for (auto& input : inputs) {
    for (size_t i = 0; i < count; ++i) {
      input.push_back(value(random));
      exact[i] += input.back();
    }
  }
  std::vector<std::vector<float>> results(inputs);
  auto group = arena_group(size);
  group.run([&](Communicator& comm) {
    auto& data = results[static_cast<size_t>(comm.rank())];
    allreduce(comm, std::as_writable_bytes(std::span(data)), count, DataType::float32,
              ReduceOp::sum, {AllreduceAlgorithm::shared_memory});
  });
  for (int r = 1; r < size; ++r) {
    // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): identical bits are the point
    EXPECT_EQ(std::memcmp(results[0].data(), results[static_cast<size_t>(r)].data(),
                          count * sizeof(float)),
              0)
        << "rank " << r << " differs from rank 0";
  }
  for (size_t i = 0; i < count; ++i) {
    ASSERT_NEAR(results[0][i], exact[i], 1e-3 * size) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ArenaRounding, ::testing::Values(2, 3, 4));

// Many calls of changing sizes back to back: slot halves are reused only when every rank is done
// with them, whatever mix of one-barrier and two-barrier steps precedes.
TEST(ArenaAllreduceSequence, ManyCallsOfMixedSizes) {
  const int size = 3;
  auto group = arena_group(size);
  group.run([&](Communicator& comm) {
    for (int call = 0; call < 200; ++call) {
      const size_t count = static_cast<size_t>((call * 7919) % 9000);
      std::vector<int32_t> data(count);
      for (size_t i = 0; i < count; ++i) {
        data[i] = static_cast<int32_t>(i) * (comm.rank() + 1) + call;
      }
      allreduce(comm, std::as_writable_bytes(std::span(data)), count, DataType::int32,
                ReduceOp::sum, {AllreduceAlgorithm::shared_memory});
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(data[i], static_cast<int32_t>(i) * 6 + 3 * call)
            << "call " << call << " element " << i << " rank " << comm.rank();
      }
    }
  });
}

TEST(ArenaAllreduceChoice, AutomaticUsesTheArenaUpToItsLimit) {
  const size_t limit = 4096;
  CommunicatorOptions options = testing::default_test_options();
  options.host_cpus = 64;  // not oversubscribed, whatever this machine has
  auto group = arena_group(3, limit, options);
  group.run([&](Communicator& comm) {
    ASSERT_NE(comm.arena(), nullptr);
    ASSERT_FALSE(comm.oversubscribed());
    for (size_t count : {size_t{1}, limit / 4, limit / 4 + 1, size_t{100000}}) {
      std::vector<float> data(count, static_cast<float>(comm.rank()));
      const uint64_t before = comm.arena()->steps;
      allreduce(comm, std::as_writable_bytes(std::span(data)), count, DataType::float32,
                ReduceOp::sum);
      const bool used = comm.arena()->steps != before;
      EXPECT_EQ(used, count * sizeof(float) <= limit) << "count " << count;
      EXPECT_EQ(data.back(), 3.0f) << "count " << count;
    }
  });
}

// More ranks than CPUs: only messages below small_message_bytes go through the arena.
TEST(ArenaAllreduceChoice, OversubscribedHostUsesTheArenaForSmallMessagesOnly) {
  CommunicatorOptions options = testing::default_test_options();
  options.host_cpus = 2;
  auto group = arena_group(3, SIZE_MAX, options);
  group.run([&](Communicator& comm) {
    ASSERT_TRUE(comm.oversubscribed());
    for (size_t count : {size_t{1}, size_t{1000}, size_t{16384}, size_t{100000}}) {
      std::vector<float> data(count, 1.0f);
      const uint64_t before = comm.arena()->steps;
      allreduce(comm, std::as_writable_bytes(std::span(data)), count, DataType::float32,
                ReduceOp::sum, {AllreduceAlgorithm::automatic, size_t{64} * 1024});
      EXPECT_EQ(comm.arena()->steps != before, count * sizeof(float) < size_t{64} * 1024)
          << "count " << count;
      EXPECT_EQ(data.back(), 3.0f) << "count " << count;
    }
  });
}

TEST(ArenaAllreduceChoice, ZeroLimitNeverUsesTheArena) {
  auto group = arena_group(2, 0);
  group.run([&](Communicator& comm) {
    std::vector<float> data(10, 1.0f);
    allreduce(comm, std::as_writable_bytes(std::span(data)), data.size(), DataType::float32,
              ReduceOp::sum);
    EXPECT_EQ(comm.arena()->steps, 0u);
    EXPECT_EQ(data[9], 2.0f);
  });
}

// A subgroup that is not the arena's whole membership must not touch it (other members would
// never join its steps): the automatic choice falls back, the explicit one refuses.
TEST(ArenaAllreduceChoice, PartialSubgroupDoesNotUseTheArena) {
  auto group = arena_group(3);
  group.run([&](Communicator& comm) {
    if (comm.rank() == 2) return;
    const int pair[] = {0, 1};
    Communicator sub = subgroup(comm, pair);
    EXPECT_EQ(sub.arena(), nullptr);
    std::vector<float> data(100, 1.0f);
    auto bytes = std::as_writable_bytes(std::span(data));
    EXPECT_THROW(allreduce(sub, bytes, data.size(), DataType::float32, ReduceOp::sum,
                           {AllreduceAlgorithm::shared_memory}),
                 InvalidArgument);
    allreduce(sub, bytes, data.size(), DataType::float32, ReduceOp::sum);
    EXPECT_EQ(data[0], 2.0f);
  });
}

TEST(ArenaAllreduceChoice, WholeHostSubgroupSharesTheArena) {
  auto group = arena_group(3);
  group.run([&](Communicator& comm) {
    const int all[] = {0, 1, 2};
    Communicator sub = subgroup(comm, all);
    ASSERT_EQ(sub.arena(), comm.arena());
    std::vector<float> data(100, 1.0f);
    allreduce(sub, std::as_writable_bytes(std::span(data)), data.size(), DataType::float32,
              ReduceOp::sum, {AllreduceAlgorithm::shared_memory});
    allreduce(comm, std::as_writable_bytes(std::span(data)), data.size(), DataType::float32,
              ReduceOp::sum, {AllreduceAlgorithm::shared_memory});
    EXPECT_EQ(data[0], 9.0f);
  });
}

const AllreduceOptions kArena{AllreduceAlgorithm::shared_memory};

// Rank 0 closes its links (what the kernel does for a killed process) while the others wait for
// it on the arena's flags: they sleep on the futex and must notice through the links, long before
// the peer timeout.
// An idle runtime runs no cycles through the arena (core/session.cc): it learns that a peer
// began one from the peer's `ready` flag for the next step.
TEST(ArenaIdle, AMemberThatBeginsACollectiveIsSeenByTheOthersUntilTheyJoin) {
  auto group = arena_group(3);
  group.run([&](Communicator& comm) {
    EXPECT_FALSE(arena_member_started_next_step(comm)) << "rank " << comm.rank();
  });
  std::atomic<int> seen{0};
  group.run([&](Communicator& comm) {
    std::vector<float> one = {1.0f};
    if (comm.rank() != 1) {
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (!arena_member_started_next_step(comm) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(100us);
      }
      EXPECT_TRUE(arena_member_started_next_step(comm)) << "rank " << comm.rank();
      ++seen;
    }
    allreduce(comm, std::as_writable_bytes(std::span(one)), 1, DataType::float32, ReduceOp::sum,
              {AllreduceAlgorithm::shared_memory});
    EXPECT_EQ(one[0], 3.0f);
  });
  EXPECT_EQ(seen.load(), 2);
  group.run([&](Communicator& comm) {  // every step done: nobody is ahead
    EXPECT_FALSE(arena_member_started_next_step(comm)) << "rank " << comm.rank();
  });
  RankThreads no_arena(2);
  EXPECT_FALSE(arena_member_started_next_step(no_arena.comm(0)));
}

TEST(ArenaPeerFailure, RankThatLeavesIsNamedByEverySurvivor) {
  CommunicatorOptions options = testing::default_test_options();
  options.peer_timeout = 20s;
  auto group = arena_group(4, SIZE_MAX, options);
  std::vector<double> failed_after(4, -1.0);
  const auto start = std::chrono::steady_clock::now();
  const auto errors = group.run_collect(
      [&](Communicator& comm) {
        std::vector<float> data(100000, 1.0f);
        auto bytes = std::as_writable_bytes(std::span(data));
        allreduce(comm, bytes, data.size(), DataType::float32, ReduceOp::sum, kArena);
        if (comm.rank() == 0) {
          std::this_thread::sleep_for(300ms);  // the others are asleep in the next allreduce
          comm.abort();
          return;
        }
        try {
          allreduce(comm, bytes, data.size(), DataType::float32, ReduceOp::sum, kArena);
        } catch (...) {
          failed_after[static_cast<size_t>(comm.rank())] = testing::seconds_since(start);
          throw;
        }
      },
      /*abort_on_error=*/false);
  EXPECT_FALSE(errors[0]);
  for (int r = 1; r < 4; ++r) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " did not fail";
    EXPECT_EQ(testing::peer_of(errors[r]), 0)
        << "rank " << r << ": " << testing::describe(errors[r]);
    EXPECT_NE(testing::describe(errors[r]).find("closed the connection"), std::string::npos)
        << testing::describe(errors[r]);
    EXPECT_LT(failed_after[static_cast<size_t>(r)], 10.0) << "rank " << r;  // timeout: 20 s
  }
}

// A rank that stays connected but never joins is named after the peer timeout.
TEST(ArenaPeerFailure, SilentRankIsNamedAfterPeerTimeout) {
  CommunicatorOptions options = testing::default_test_options();
  options.peer_timeout = 500ms;
  auto group = arena_group(3, SIZE_MAX, options);
  std::atomic<bool> done{false};
  const auto errors = group.run_collect(
      [&](Communicator& comm) {
        if (comm.rank() == 1) {
          while (!done) std::this_thread::sleep_for(10ms);
          return;
        }
        std::vector<float> data(10, 1.0f);
        try {
          allreduce(comm, std::as_writable_bytes(std::span(data)), data.size(), DataType::float32,
                    ReduceOp::sum, kArena);
        } catch (...) {
          done = true;
          throw;
        }
      },
      /*abort_on_error=*/false);
  for (int r : {0, 2}) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " did not fail";
    EXPECT_EQ(testing::peer_of(errors[r]), 1) << testing::describe(errors[r]);
    EXPECT_NE(testing::describe(errors[r]).find("no progress from rank 1"), std::string::npos)
        << testing::describe(errors[r]);
  }
}

}  // namespace
}  // namespace kolo::comm
