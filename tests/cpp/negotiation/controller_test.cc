#include "negotiation/controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <thread>

#include "thread_ranks.h"

namespace kolo::negotiation {
namespace {

Request allreduce(std::string name, std::vector<int64_t> shape = {4}) {
  Request r;
  r.name = std::move(name);
  r.op = OpType::allreduce;
  r.dtype = DataType::float32;
  r.shape = std::move(shape);
  return r;
}

// What one rank saw: the list each cycle returned and the stats after each cycle.
struct RankRun {
  std::vector<ResponseList> lists;
  std::vector<ControllerStats> stats;
  size_t pending_left = 0;
};

using Schedule = std::function<std::vector<Request>(int rank, int cycle)>;
using ShutdownAt = std::function<bool(int rank, int cycle)>;

// Every rank runs `cycles` cycles (fewer if a cycle returns shutdown).
std::vector<RankRun> drive(
    int size, int cycles, size_t cache_capacity, const Schedule& schedule,
    const ShutdownAt& shutdown = [](int, int) { return false; }) {
  Logger logger(LogLevel::off);
  return testing::run_ranks<RankRun>(size, [&](comm::Communicator& comm) {
    Controller controller(comm, ControllerOptions{cache_capacity}, logger);
    RankRun run;
    for (int cycle = 0; cycle < cycles; ++cycle) {
      run.lists.push_back(
          controller.cycle(schedule(comm.rank(), cycle), shutdown(comm.rank(), cycle)));
      run.stats.push_back(controller.stats());
      if (run.lists.back().shutdown) break;
    }
    run.pending_left = controller.local_pending().size();
    return run;
  });
}

void expect_identical_on_all_ranks(const std::vector<RankRun>& runs) {
  for (size_t r = 1; r < runs.size(); ++r) {
    ASSERT_EQ(runs[r].lists.size(), runs[0].lists.size()) << "rank " << r;
    for (size_t c = 0; c < runs[0].lists.size(); ++c) {
      EXPECT_EQ(runs[r].lists[c], runs[0].lists[c]) << "rank " << r << " cycle " << c;
    }
  }
}

std::vector<Response> all_responses(const RankRun& run) {
  std::vector<Response> out;
  for (const auto& list : run.lists)
    out.insert(out.end(), list.responses.begin(), list.responses.end());
  return out;
}

std::vector<std::string> names_of(const std::vector<Response>& responses) {
  std::vector<std::string> names;
  for (const auto& r : responses) names.insert(names.end(), r.names.begin(), r.names.end());
  return names;
}

struct Shape {
  int size;
  size_t capacity;
};

class ControllerOrderTest : public ::testing::TestWithParam<Shape> {};

// Eight tensors, four rounds; every rank submits them in its own order spread over eight
// cycles. Whatever the order and the cache, all ranks get identical lists and every name
// completes exactly once per round without error.
TEST_P(ControllerOrderTest, DifferentOrdersAndCyclesAgree) {
  const auto [size, capacity] = GetParam();
  constexpr int kNames = 8, kRounds = 4, kCyclesPerRound = 12;
  auto schedule = [&](int rank, int cycle) {
    std::vector<Request> out;
    int round = cycle / kCyclesPerRound, offset = cycle % kCyclesPerRound;
    for (int i = 0; i < kNames; ++i) {
      if ((i * 3 + rank * 5 + round) % kNames == offset) {
        out.push_back(allreduce("t" + std::to_string(i), {i + 1, 2}));
      }
    }
    return out;
  };
  auto runs = drive(size, kRounds * kCyclesPerRound, capacity, schedule);
  ASSERT_EQ(runs.size(), static_cast<size_t>(size));
  expect_identical_on_all_ranks(runs);

  for (int round = 0; round < kRounds; ++round) {
    std::vector<Response> responses;
    for (int c = round * kCyclesPerRound; c < (round + 1) * kCyclesPerRound; ++c) {
      const auto& list = runs[0].lists[static_cast<size_t>(c)];
      responses.insert(responses.end(), list.responses.begin(), list.responses.end());
    }
    std::vector<std::string> names = names_of(responses);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"}))
        << "round " << round;
    for (const auto& r : responses) {
      EXPECT_TRUE(r.error.empty()) << r.error;
      EXPECT_EQ(r.op, OpType::allreduce);
    }
  }
  for (const auto& run : runs) EXPECT_EQ(run.pending_left, 0u);

  const ControllerStats& stats = runs[0].stats.back();
  EXPECT_EQ(stats.cycles, static_cast<uint64_t>(kRounds * kCyclesPerRound));
  if (capacity > 0) {
    // After the first round every name is agreed with cache bits alone.
    EXPECT_EQ(stats.cache_hits, static_cast<uint64_t>(kNames * (kRounds - 1)));
    EXPECT_EQ(runs[0].stats[kCyclesPerRound - 1].full_exchanges, stats.full_exchanges);
    EXPECT_GT(stats.fast_cycles, 0u);
  } else {
    EXPECT_EQ(stats.cache_hits, 0u);
    EXPECT_EQ(stats.fast_cycles, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(SizesAndCaches, ControllerOrderTest,
                         ::testing::Values(Shape{1, 0}, Shape{1, 1024}, Shape{2, 0}, Shape{2, 1024},
                                           Shape{3, 0}, Shape{3, 1024}, Shape{5, 0},
                                           Shape{5, 1024}),
                         [](const auto& info) {
                           return "size" + std::to_string(info.param.size) + "_cache" +
                                  std::to_string(info.param.capacity);
                         });

// Identical rounds, every rank submitting all names in the same cycle: the first round goes
// through the coordinator, every later one is a fast cycle served from the cache, and the
// responses are the same as without a cache.
TEST(ControllerTest, RepeatedRoundsTakeTheFastPath) {
  constexpr int kRounds = 6, kNames = 10;
  auto schedule = [&](int rank, int) {
    std::vector<Request> out;
    for (int i = 0; i < kNames; ++i) {
      int k = (i + rank * 3) % kNames;  // a different submission order on every rank
      out.push_back(allreduce("g" + std::to_string(k), {k + 1}));
    }
    return out;
  };
  auto cached = drive(3, kRounds, 1024, schedule);
  auto uncached = drive(3, kRounds, 0, schedule);
  expect_identical_on_all_ranks(cached);
  expect_identical_on_all_ranks(uncached);

  for (const auto& run : cached) {
    const ControllerStats& s = run.stats.back();
    EXPECT_EQ(s.cycles, static_cast<uint64_t>(kRounds));
    EXPECT_EQ(s.full_exchanges, 1u);
    EXPECT_EQ(s.fast_cycles, static_cast<uint64_t>(kRounds - 1));
    EXPECT_EQ(s.cache_hits, static_cast<uint64_t>(kNames * (kRounds - 1)));
  }
  for (const auto& run : uncached) {
    const ControllerStats& s = run.stats.back();
    EXPECT_EQ(s.full_exchanges, static_cast<uint64_t>(kRounds));
    EXPECT_EQ(s.fast_cycles, 0u);
    EXPECT_EQ(s.cache_hits, 0u);
  }
  for (int c = 0; c < kRounds; ++c) {
    auto a = cached[0].lists[static_cast<size_t>(c)].responses;
    auto b = uncached[0].lists[static_cast<size_t>(c)].responses;
    ASSERT_EQ(a.size(), static_cast<size_t>(kNames)) << "cycle " << c;
    auto by_name = [](const Response& x, const Response& y) { return x.names < y.names; };
    std::sort(a.begin(), a.end(), by_name);
    std::sort(b.begin(), b.end(), by_name);
    EXPECT_EQ(a, b) << "cycle " << c;
  }
}

// A group whose members do not all get single-name responses (two float64 members merge into
// one) is never cached: were its float32 member served from the cache, the coordinator would hold
// the float64 members forever waiting for it (Horovod's TF1 grouped allgather gradient test hung
// this way on its second session.run).
TEST(ControllerTest, MixedDtypeGroupCompletesEveryRound) {
  constexpr int kRounds = 3;
  auto schedule = [&](int, int) {
    std::vector<Request> out;
    for (int i = 0; i < 3; ++i) {
      Request r = allreduce("m" + std::to_string(i));
      r.dtype = i == 0 ? DataType::float32 : DataType::float64;
      r.group_id = 7;
      r.group_size = 3;
      out.push_back(r);
    }
    return out;
  };
  auto runs = drive(2, kRounds, 1024, schedule);
  expect_identical_on_all_ranks(runs);
  for (int c = 0; c < kRounds; ++c) {
    std::vector<std::string> names = names_of(runs[0].lists[static_cast<size_t>(c)].responses);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"m0", "m1", "m2"})) << "cycle " << c;
  }
  for (const auto& run : runs) EXPECT_EQ(run.pending_left, 0u);
}

TEST(ControllerTest, MismatchFailsOnEveryRank) {
  for (size_t capacity : {size_t{0}, size_t{1024}}) {
    // Round 0 (cycle 0) agrees and fills the cache; in round 1 (cycle 1) rank 1 submits float16.
    auto schedule = [](int rank, int cycle) {
      Request bad = allreduce("grad.fc1");
      if (cycle == 1 && rank == 1) bad.dtype = DataType::float16;
      return std::vector<Request>{allreduce("ok"), bad};
    };
    auto runs = drive(3, 2, capacity, schedule);
    expect_identical_on_all_ranks(runs);
    const auto& responses = runs[0].lists[1].responses;
    ASSERT_EQ(responses.size(), 2u);
    auto bad = std::find_if(responses.begin(), responses.end(),
                            [](const Response& r) { return r.names[0] == "grad.fc1"; });
    ASSERT_NE(bad, responses.end());
    EXPECT_EQ(bad->error,
              "Mismatched dtype for tensor 'grad.fc1': rank 0 and rank 2 submitted float32, "
              "rank 1 submitted float16");
    auto ok = std::find_if(responses.begin(), responses.end(),
                           [](const Response& r) { return r.names[0] == "ok"; });
    ASSERT_NE(ok, responses.end());
    EXPECT_TRUE(ok->error.empty());
    for (const auto& run : runs) {
      EXPECT_EQ(run.pending_left, 0u);
      EXPECT_EQ(run.stats.back().cache_invalidations, capacity > 0 ? 1u : 0u);
    }
  }
}

TEST(ControllerTest, ShapeChangeInvalidatesCacheOnEveryRank) {
  // Cycles 0,1: shape {4}; cycles 2,3: shape {8} on every rank; cycle 4: {8} on all but rank 2.
  auto schedule = [](int rank, int cycle) {
    std::vector<int64_t> shape = cycle < 2 ? std::vector<int64_t>{4} : std::vector<int64_t>{8};
    if (cycle == 4 && rank == 2) shape = {16};
    return std::vector<Request>{allreduce("w", shape), allreduce("steady")};
  };
  auto runs = drive(3, 5, 64, schedule);
  expect_identical_on_all_ranks(runs);
  const auto& s = runs[0].stats;
  EXPECT_EQ(s[1].cache_hits, 2u);           // cycle 1: both from the cache
  EXPECT_EQ(s[2].cache_invalidations, 1u);  // cycle 2: 'w' erased everywhere...
  EXPECT_EQ(s[2].full_exchanges, 2u);       // ...and renegotiated in the same cycle
  EXPECT_EQ(s[2].cache_hits, 3u);           // 'steady' still hit
  EXPECT_EQ(s[3].cache_hits, 5u);           // cycle 3: new shape of 'w' cached
  EXPECT_EQ(s[3].full_exchanges, 2u);
  EXPECT_EQ(s[4].cache_invalidations, 2u);
  for (int c = 0; c < 4; ++c) {
    for (const auto& r : runs[0].lists[static_cast<size_t>(c)].responses) {
      EXPECT_TRUE(r.error.empty()) << "cycle " << c << ": " << r.error;
    }
  }
  auto last = runs[0].lists[4].responses;
  auto w =
      std::find_if(last.begin(), last.end(), [](const Response& r) { return r.names[0] == "w"; });
  ASSERT_NE(w, last.end());
  EXPECT_EQ(w->error,
            "Mismatched shape for tensor 'w': rank 0 and rank 1 submitted [8], rank 2 submitted "
            "[16]");
}

TEST(ControllerTest, LateSubmitterIsServedFromTheCache) {
  // Cycle 0: both ranks submit x (cached). Then rank 0 submits x at cycle 1, rank 1 at cycle 4.
  auto schedule = [](int rank, int cycle) {
    if (cycle == 0 || (rank == 0 && cycle == 1) || (rank == 1 && cycle == 4)) {
      return std::vector<Request>{allreduce("x")};
    }
    return std::vector<Request>{};
  };
  auto runs = drive(2, 6, 16, schedule);
  expect_identical_on_all_ranks(runs);
  for (int c : {1, 2, 3, 5}) EXPECT_TRUE(runs[0].lists[static_cast<size_t>(c)].responses.empty());
  ASSERT_EQ(runs[0].lists[4].responses.size(), 1u);
  EXPECT_TRUE(runs[0].lists[4].responses[0].error.empty());
  const ControllerStats& s = runs[0].stats.back();
  EXPECT_EQ(s.full_exchanges, 1u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.fast_cycles, 1u);
}

TEST(ControllerTest, IdleCyclesAreHeartbeatsOnly) {
  auto runs = drive(3, 20, 1024, [](int, int) { return std::vector<Request>{}; });
  expect_identical_on_all_ranks(runs);
  for (const auto& run : runs) {
    EXPECT_EQ(run.stats.back().cycles, 20u);
    EXPECT_EQ(run.stats.back().full_exchanges, 0u);
    EXPECT_TRUE(all_responses(run).empty());
  }
}

TEST(ControllerTest, DuplicateNameFailsOnEveryRank) {
  // Cycle 0 caches x; rank 0 then submits x at cycles 1 and 2, rank 1 at cycle 3; cycle 5
  // submits x on both ranks again, which must work normally.
  auto schedule = [](int rank, int cycle) {
    bool submit = cycle == 0 || cycle == 5 || (rank == 0 && (cycle == 1 || cycle == 2)) ||
                  (rank == 1 && cycle == 3);
    return submit ? std::vector<Request>{allreduce("x")} : std::vector<Request>{};
  };
  for (size_t capacity : {size_t{0}, size_t{8}}) {
    auto runs = drive(2, 6, capacity, schedule);
    expect_identical_on_all_ranks(runs);
    auto responses = all_responses(runs[0]);
    ASSERT_EQ(responses.size(), 3u);
    EXPECT_TRUE(responses[0].error.empty());
    EXPECT_EQ(responses[1].error,
              "Duplicate request for tensor 'x' from rank 0: submitted again before the previous "
              "request with that name completed");
    EXPECT_TRUE(responses[2].error.empty()) << responses[2].error;
    ASSERT_EQ(runs[0].lists[5].responses.size(), 1u);
    for (const auto& run : runs) EXPECT_EQ(run.pending_left, 0u);
  }
}

TEST(ControllerTest, ShutdownByOneRankFailsPendingEverywhere) {
  for (size_t capacity : {size_t{0}, size_t{32}}) {
    // Cycle 0: all submit c (cached when enabled). Cycle 1: rank 0 submits x and c, rank 2
    // submits y. Cycle 3: rank 1 announces shutdown.
    auto schedule = [](int rank, int cycle) {
      std::vector<Request> out;
      if (cycle == 0) out.push_back(allreduce("c"));
      if (cycle == 1 && rank == 0) out = {allreduce("x"), allreduce("c")};
      if (cycle == 1 && rank == 2) out.push_back(allreduce("y"));
      return out;
    };
    auto shutdown = [](int rank, int cycle) { return rank == 1 && cycle == 3; };
    auto runs = drive(3, 10, capacity, schedule, shutdown);
    expect_identical_on_all_ranks(runs);
    ASSERT_EQ(runs[0].lists.size(), 4u) << "every rank stops at the shutdown cycle";
    const ResponseList& last = runs[0].lists[3];
    EXPECT_TRUE(last.shutdown);
    std::map<std::string, std::string> errors;
    for (const auto& r : last.responses) errors[r.names[0]] = r.error;
    EXPECT_EQ(errors.size(), 3u);
    EXPECT_EQ(errors["x"],
              "rank 1 shut down while tensor 'x' was pending: submitted by rank 0, not by rank 1 "
              "and rank 2");
    EXPECT_EQ(errors["y"],
              "rank 1 shut down while tensor 'y' was pending: submitted by rank 2, not by rank 0 "
              "and rank 1");
    EXPECT_EQ(errors["c"],
              "rank 1 shut down while tensor 'c' was pending: submitted by rank 0, not by rank 1 "
              "and rank 2");
    for (const auto& run : runs) EXPECT_EQ(run.pending_left, 0u);
  }
}

TEST(ControllerTest, OtherOpsThroughCache) {
  auto schedule = [](int rank, int) {
    Request gather = allreduce("gather", {rank + 1, 3});
    gather.op = OpType::allgather;
    Request bcast = allreduce("bcast", {5});
    bcast.op = OpType::broadcast;
    bcast.root = 2;
    Request barrier;
    barrier.name = "barrier";
    barrier.op = OpType::barrier;
    return std::vector<Request>{gather, bcast, barrier};
  };
  auto runs = drive(3, 3, 1024, schedule);
  expect_identical_on_all_ranks(runs);
  for (int c = 0; c < 3; ++c) {
    const auto& responses = runs[0].lists[static_cast<size_t>(c)].responses;
    ASSERT_EQ(responses.size(), 3u) << "cycle " << c;
    for (const auto& r : responses) {
      EXPECT_TRUE(r.error.empty()) << r.error;
      if (r.op == OpType::allgather) {
        EXPECT_EQ(r.first_dims, (std::vector<int64_t>{1, 2, 3}));
      }
      if (r.op == OpType::broadcast) {
        EXPECT_EQ(r.root, 2);
      }
    }
  }
  EXPECT_EQ(runs[0].stats.back().cache_hits, 6u);
}

// A request stuck on its cache bit (rank 1 is late) is handed to the coordinator after
// stalled_cached_after, so the stall inspector's view names the missing rank; the name still
// completes normally once rank 1 submits it.
TEST(ControllerTest, StalledCachedRequestReachesTheCoordinator) {
  Logger logger(LogLevel::off);
  struct Seen {
    std::vector<PendingTensor> pending_before_late_submit;
    std::vector<Response> responses;
    ControllerStats stats;
  };
  auto runs = testing::run_ranks<Seen>(2, [&](comm::Communicator& comm) {
    ControllerOptions options;
    options.cache_capacity = 16;
    options.stalled_cached_after = std::chrono::milliseconds(20);
    Controller controller(comm, options, logger);
    Seen seen;
    auto take = [&](ResponseList list) {
      seen.responses.insert(seen.responses.end(), list.responses.begin(), list.responses.end());
    };
    take(controller.cycle({allreduce("x")}, false));  // cached
    take(controller.cycle(
        comm.rank() == 0 ? std::vector<Request>{allreduce("x")} : std::vector<Request>{}, false));
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    take(controller.cycle({}, false));  // rank 0's x is stalled now
    seen.pending_before_late_submit = controller.coordinator_pending();
    take(controller.cycle(
        comm.rank() == 1 ? std::vector<Request>{allreduce("x")} : std::vector<Request>{}, false));
    seen.stats = controller.stats();
    return seen;
  });
  ASSERT_EQ(runs.size(), 2u);
  ASSERT_EQ(runs[0].pending_before_late_submit.size(), 1u);
  EXPECT_EQ(runs[0].pending_before_late_submit[0].name, "x");
  EXPECT_EQ(runs[0].pending_before_late_submit[0].submitted, std::vector<int>{0});
  EXPECT_EQ(runs[0].pending_before_late_submit[0].missing, std::vector<int>{1});
  EXPECT_TRUE(runs[1].pending_before_late_submit.empty());  // only rank 0 coordinates
  for (const auto& run : runs) {
    ASSERT_EQ(run.responses.size(), 2u);
    EXPECT_TRUE(run.responses[1].error.empty()) << run.responses[1].error;
    EXPECT_EQ(run.responses, runs[0].responses);
    EXPECT_EQ(run.stats.cache_invalidations, 1u);
  }
  EXPECT_EQ(runs[0].stats.stalled_cached_requests, 1u);
  EXPECT_EQ(runs[1].stats.stalled_cached_requests, 0u);
}

// Random schedules, cache sizes from none to thrashing, shapes changing between rounds (on all
// ranks alike): the lists agree on every rank, every round completes every name exactly once.
TEST(ControllerTest, RandomSchedulesStayConsistent) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 12; ++trial) {
    const int size = 1 + static_cast<int>(rng() % 4);
    const size_t capacity = std::vector<size_t>{0, 1, 2, 3, 100}[rng() % 5];
    constexpr int kNames = 6, kRounds = 5, kWindow = 6, kCyclesPerRound = kWindow + 2;
    // submit_at[round][rank][name]: the cycle offset within the round; shape per round and name.
    std::vector<std::vector<std::vector<int>>> submit_at(kRounds);
    std::vector<std::vector<int64_t>> dim(kRounds, std::vector<int64_t>(kNames));
    for (int round = 0; round < kRounds; ++round) {
      submit_at[round].assign(static_cast<size_t>(size), std::vector<int>(kNames));
      for (auto& rank : submit_at[round]) {
        for (auto& at : rank) at = static_cast<int>(rng() % kWindow);
      }
      for (auto& d : dim[round]) d = 1 + static_cast<int64_t>(rng() % 2);
    }
    auto schedule = [&](int rank, int cycle) {
      std::vector<Request> out;
      int round = cycle / kCyclesPerRound, offset = cycle % kCyclesPerRound;
      for (int i = 0; i < kNames; ++i) {
        if (submit_at[round][rank][i] == offset) {
          out.push_back(allreduce("n" + std::to_string(i), {dim[round][i]}));
        }
      }
      return out;
    };
    auto runs = drive(size, kRounds * kCyclesPerRound, capacity, schedule);
    SCOPED_TRACE("trial " + std::to_string(trial) + " size " + std::to_string(size) + " capacity " +
                 std::to_string(capacity));
    expect_identical_on_all_ranks(runs);
    auto responses = all_responses(runs[0]);
    ASSERT_EQ(responses.size(), static_cast<size_t>(kNames * kRounds));
    for (const auto& r : responses) EXPECT_TRUE(r.error.empty()) << r.error;
    for (const auto& run : runs) EXPECT_EQ(run.pending_left, 0u);
  }
}

// The hooks core/observability.h uses: rank 0 publishes tuned parameters and cancels stalled
// names; both force an exchange even when every request is a cache hit.
TEST(ControllerHooks, PublishedParametersReachEveryRankInTheSameCycle) {
  Logger logger(LogLevel::off);
  const TunedParameters tuned{5.0, 8u << 20, false, true};
  auto runs = testing::run_ranks<std::vector<ResponseList>>(3, [&](comm::Communicator& comm) {
    Controller controller(comm, ControllerOptions{16}, logger);
    std::vector<ResponseList> lists;
    for (int cycle = 0; cycle < 4; ++cycle) {
      // The same tensor every cycle: from cycle 1 on a pure cache hit (no exchange of its own).
      lists.push_back(controller.cycle({allreduce("w")}, false));
      if (cycle == 1) controller.publish(tuned);  // ignored on ranks other than 0
      if (lists.back().parameters)
        controller.set_cache_enabled(lists.back().parameters->cache_enabled);
    }
    EXPECT_EQ(controller.stats().full_exchanges,
              3u);  // cycle 0, cycle 2 (forced), cycle 3 (no cache)
    return lists;
  });
  for (const auto& lists : runs) {
    ASSERT_EQ(lists.size(), 4u);
    EXPECT_FALSE(lists[1].parameters);
    ASSERT_TRUE(lists[2].parameters);
    EXPECT_EQ(*lists[2].parameters, tuned);
    EXPECT_FALSE(lists[3].parameters);
    for (const auto& list : lists)
      EXPECT_EQ(names_of(list.responses), std::vector<std::string>{"w"});
  }
}

TEST(ControllerHooks, CancelFailsAStalledNameOnTheRanksThatSubmittedIt) {
  Logger logger(LogLevel::off);
  auto runs = testing::run_ranks<std::vector<Response>>(3, [&](comm::Communicator& comm) {
    ControllerOptions options{16};
    options.stalled_cached_after = std::chrono::milliseconds(1);
    Controller controller(comm, options, logger);
    std::vector<Response> seen;
    auto run = [&](std::vector<Request> requests) {
      for (auto& r : controller.cycle(std::move(requests), false).responses) seen.push_back(r);
    };
    run({allreduce("s")});  // cached on every rank
    // Rank 2 holds "s" back; the others' cache-bit requests reach the coordinator once stalled.
    run(comm.rank() == 2 ? std::vector<Request>{} : std::vector<Request>{allreduce("s")});
    for (int i = 0; i < 3; ++i) {  // every rank runs the same cycles (lockstep)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      run({});
    }
    if (comm.rank() == 0) {
      EXPECT_EQ(controller.coordinator_pending().at(0).missing, std::vector<int>{2});
    }
    controller.cancel("s", "stalled: rank 2");
    // The cancellation travels in the next cycle's exchange.
    run({});
    run({});
    EXPECT_TRUE(controller.local_pending().empty()) << "rank " << comm.rank();
    return seen;
  });
  for (int rank = 0; rank < 3; ++rank) {
    const auto& seen = runs[static_cast<size_t>(rank)];
    ASSERT_EQ(seen.size(), 2u) << "rank " << rank;
    EXPECT_EQ(seen[1].names, std::vector<std::string>{"s"});
    EXPECT_EQ(seen[1].error, "stalled: rank 2");
  }
}

}  // namespace
}  // namespace kolo::negotiation
