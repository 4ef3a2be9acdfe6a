// The whole runtime below Python: N sessions in one process (threads), joined through a real
// authenticated rendezvous server and TCP mesh on loopback.
#include "core/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <thread>

#include "base/errors.h"
#include "rendezvous/tcp_store.h"

namespace kolo::core {
namespace {

struct Job {
  Logger logger{LogLevel::error};
  transport::Secret secret = transport::Secret::generate();
  rendezvous::TcpStoreServer server{"127.0.0.1", 0, secret, logger};
  uint64_t round = 0;

  // Runs body(rank, session, handles) on `size` threads, each with its own session.
  void run(int size, const Config& given,
           const std::function<void(int, Session&, HandleTable&)>& body) {
    // Ranks as threads of one process: placing one rank would move every other rank's threads.
    Config config = given;
    config.bind_to = placement::BindTo::none;
    std::vector<std::thread> threads;
    std::vector<std::string> failures(size);
    for (int rank = 0; rank < size; ++rank) {
      threads.emplace_back([&, rank] {
        try {
          bootstrap::LaunchInfo launch;
          launch.rank = rank;
          launch.size = size;
          launch.hostname = "testhost";
          launch.rendezvous_addr = "127.0.0.1";
          launch.rendezvous_port = server.port();
          launch.secret_hex = secret.to_hex();
          HandleTable handles;
          Session session(config, launch, round, handles, logger);
          body(rank, session, handles);
          session.shutdown();
        } catch (const std::exception& error) {
          failures[rank] = error.what();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    ++round;
    for (int rank = 0; rank < size; ++rank) EXPECT_EQ(failures[rank], "") << "rank " << rank;
  }
};

TensorEntry allreduce_entry(const std::string& name, std::vector<float>& data,
                            negotiation::UserReduceOp op = negotiation::UserReduceOp::sum) {
  TensorEntry entry;
  entry.request.name = name;
  entry.request.op = negotiation::OpType::allreduce;
  entry.request.reduce_op = op;
  entry.request.dtype = DataType::float32;
  entry.request.shape = {static_cast<int64_t>(data.size())};
  entry.input = data.data();
  entry.output = data.data();
  return entry;
}

Config test_config() {
  Config config;
  config.peer_timeout = std::chrono::seconds(10);
  config.start_timeout = std::chrono::seconds(10);
  return config;
}

class SessionTest : public ::testing::TestWithParam<int> {};

TEST_P(SessionTest, SameNamesInDifferentOrdersMatch) {
  const int size = GetParam();
  Job job;
  job.run(size, test_config(), [&](int rank, Session& session, HandleTable& handles) {
    EXPECT_EQ(session.world().size, size);
    EXPECT_EQ(session.world().local_size, size);
    constexpr int kTensors = 12;
    std::vector<std::vector<float>> data(kTensors);
    std::vector<int> order(kTensors);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(rank * 7919 + 1));
    std::vector<HandleId> ids(kTensors);
    for (int t : order) {
      data[t].assign(1 + t * 997, static_cast<float>(rank + t));
      ids[t] = session.enqueue(allreduce_entry("t" + std::to_string(t), data[t]));
    }
    for (int t = 0; t < kTensors; ++t) {
      handles.wait(ids[t]);
      float want = 0;
      for (int r = 0; r < size; ++r) want += static_cast<float>(r + t);
      EXPECT_TRUE(std::all_of(data[t].begin(), data[t].end(), [&](float v) { return v == want; }))
          << "tensor " << t << " on rank " << rank;
    }
  });
}

// Helper threads forced (REDUCE_THREADS=3): large allreduces, cut into parts on every rank, stay
// exact, and shutdown joins the helpers (none is left in the process).
TEST_P(SessionTest, LargeAllreducesWithReduceHelpersAndNoneLeftAfter) {
  const int size = GetParam();
  Config config = test_config();
  config.reduce_threads = 3;
  Job job;
  job.run(size, config, [&](int rank, Session& session, HandleTable& handles) {
    std::vector<std::vector<float>> data(3);
    std::vector<HandleId> ids;
    for (size_t t = 0; t < data.size(); ++t) {
      data[t].resize(600007 + t);  // over 1 MiB steps and segments, odd counts
      for (size_t i = 0; i < data[t].size(); ++i) data[t][i] = static_cast<float>((i + rank) % 97);
      ids.push_back(session.enqueue(allreduce_entry("big" + std::to_string(t), data[t])));
    }
    for (size_t t = 0; t < data.size(); ++t) {
      handles.wait(ids[t]);
      for (size_t i = 0; i < data[t].size(); ++i) {
        float want = 0;
        for (int r = 0; r < size; ++r) want += static_cast<float>((i + r) % 97);
        if (data[t][i] != want) {
          ADD_FAILURE() << "rank " << rank << " tensor " << t << " element " << i << ": "
                        << data[t][i] << ", want " << want;
          break;
        }
      }
    }
  });
  int left = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.starts_with("kolo-reduce")) ++left;
  }
  EXPECT_EQ(left, 0) << "reduce helpers still running after every session shut down";
}

TEST_P(SessionTest, MismatchFailsThatTensorOnEveryRankOnly) {
  const int size = GetParam();
  if (size == 1) GTEST_SKIP() << "one rank cannot disagree with itself";
  Job job;
  job.run(size, test_config(), [&](int rank, Session& session, HandleTable& handles) {
    std::vector<float> good(10, 1.0f);
    std::vector<float> bad(rank == size - 1 ? 11 : 10, 1.0f);  // last rank: other shape
    HandleId bad_id = session.enqueue(allreduce_entry("bad", bad));
    HandleId good_id = session.enqueue(allreduce_entry("good", good));
    try {
      handles.wait(bad_id);
      ADD_FAILURE() << "mismatch not reported on rank " << rank;
    } catch (const Error& error) {
      std::string text = error.what();
      EXPECT_NE(text.find("'bad'"), std::string::npos) << text;
      EXPECT_NE(text.find("rank " + std::to_string(size - 1)), std::string::npos) << text;
    }
    handles.wait(good_id);
    EXPECT_EQ(good[0], static_cast<float>(size));
  });
}

TEST_P(SessionTest, RepeatedRoundsUseTheCacheAndFuse) {
  const int size = GetParam();
  Job job;
  Config config = test_config();
  job.run(size, config, [&](int rank, Session& session, HandleTable& handles) {
    for (int step = 0; step < 10; ++step) {
      std::vector<std::vector<float>> data(6);
      std::vector<HandleId> ids;
      for (int t = 0; t < 6; ++t) {
        data[t].assign(100 + t, static_cast<float>(rank));
        ids.push_back(session.enqueue(allreduce_entry("layer" + std::to_string(t), data[t])));
      }
      for (HandleId id : ids) handles.wait(id);
      EXPECT_EQ(data[5][0], static_cast<float>(size * (size - 1) / 2));
    }
    SessionStats stats = session.stats();
    EXPECT_GE(stats.cache_hits, 9u * 6u);
    EXPECT_GT(stats.fast_cycles, 0u);
  });
}

TensorEntry driven(TensorEntry entry) {
  entry.caller_drives = true;
  return entry;
}

// A blocking call drives its own cycles (Session::drive): the results are the same, and with
// every rank on one host the cycles ran on the callers' threads; with CALLER_DRIVES off, or a
// rank alone, drive() still waits correctly.
TEST_P(SessionTest, BlockingCallsDriveTheirOwnCycles) {
  const int size = GetParam();
  for (bool enabled : {true, false}) {
    Job job;
    Config config = test_config();
    config.caller_drives = enabled;
    job.run(size, config, [&](int rank, Session& session, HandleTable& handles) {
      constexpr int kCalls = 50;
      for (int call = 0; call < kCalls; ++call) {
        std::vector<float> data(3 + call % 5, static_cast<float>(rank + call));
        const HandleId id = session.enqueue(driven(allreduce_entry("blocking", data)));
        while (!session.drive(id, std::chrono::milliseconds(100))) {
        }
        const float want = static_cast<float>(size * call + size * (size - 1) / 2);
        ASSERT_EQ(data.back(), want) << "rank " << rank << " call " << call;
        (void)handles.release(id);
      }
      const SessionStats stats = session.stats();
      if (enabled) {
        // The calls' cycles ran on this thread, not the background thread's. Not every one: a
        // background thread that wakes for its cycle-time look at the arena and finds a peer's
        // cycle begun may run it before the caller takes the lock, and complete the call.
        EXPECT_GE(stats.driven_cycles, static_cast<uint64_t>(kCalls / 2)) << "rank " << rank;
      } else {
        EXPECT_EQ(stats.driven_cycles, 0u) << "rank " << rank;
      }
    });
  }
}

// Async operations submitted beside a driven one are handed back to the background thread when
// the driven one completes first, and one submitted for driving but never driven (its caller
// interrupted) is taken up by the background thread: nothing is left waiting.
TEST_P(SessionTest, WorkADriverLeavesIsFinishedByTheBackgroundThread) {
  const int size = GetParam();
  Job job;
  job.run(size, test_config(), [&](int rank, Session& session, HandleTable& handles) {
    std::vector<std::vector<float>> async(8);
    std::vector<HandleId> ids;
    for (size_t t = 0; t < async.size(); ++t) {
      async[t].assign(64, static_cast<float>(rank));
      ids.push_back(session.enqueue(allreduce_entry("async" + std::to_string(t), async[t])));
    }
    std::vector<float> blocking(4, 1.0f);
    const HandleId id = session.enqueue(driven(allreduce_entry("blocking", blocking)));
    while (!session.drive(id, std::chrono::milliseconds(100))) {
    }
    EXPECT_EQ(blocking[0], static_cast<float>(size));
    for (HandleId async_id : ids) handles.wait(async_id);  // no drive: the loop's work
    for (const auto& data : async) EXPECT_EQ(data[0], static_cast<float>(size * (size - 1) / 2));

    std::vector<float> abandoned(2, 2.0f);
    handles.wait(session.enqueue(driven(allreduce_entry("abandoned", abandoned))));
    EXPECT_EQ(abandoned[1], 2.0f * static_cast<float>(size));
  });
}

// The int64 a process-set or join handle completes with.
int64_t number_of(HandleTable& handles, HandleId id) {
  handles.wait(id);
  OwnedBuffer out = handles.release(id);
  int64_t value = -1;
  EXPECT_EQ(out.bytes, sizeof value);
  if (out.bytes == sizeof value) std::memcpy(&value, out.data.get(), sizeof value);
  return value;
}

TensorEntry in_set(TensorEntry entry, int32_t set) {
  entry.request.process_set = set;
  return entry;
}

float sum_over(const std::vector<int>& ranks, const std::function<float(int)>& value) {
  float total = 0;
  for (int r : ranks) total += value(r);
  return total;
}

TEST(SessionProcessSets, PairsOfThreeRanksRunInterleavedAndIndependently) {
  Job job;
  std::atomic<bool> held_checked{false};  // rank 0 submits 'held' only after rank 1 looked
  job.run(3, test_config(), [&](int rank, Session& session, HandleTable& handles) {
    const std::vector<std::vector<int>> pairs = {{0, 1}, {1, 2}, {0, 2}};
    for (size_t i = 0; i < pairs.size(); ++i) {
      EXPECT_EQ(number_of(handles, session.request_add_process_set(pairs[i])),
                static_cast<int64_t>(i + 1));
    }
    EXPECT_EQ(session.process_set_ranks(2), (std::vector<int>{1, 2}));
    EXPECT_EQ(session.process_set_ids(), (std::vector<int32_t>{0, 1, 2, 3}));

    // A name pending in set 1 (rank 0 holds it back) does not delay set 2 or set 3.
    std::vector<float> held(4, static_cast<float>(rank));
    HandleId held_id = 0;
    if (rank == 1) held_id = session.enqueue(in_set(allreduce_entry("held", held), 1));

    for (int step = 0; step < 4; ++step) {
      // Each rank submits its two sets in an order of its own.
      std::vector<int32_t> mine;
      for (int32_t id = 1; id <= 3; ++id) {
        const auto& members = pairs[static_cast<size_t>(id - 1)];
        if (std::find(members.begin(), members.end(), rank) != members.end()) mine.push_back(id);
      }
      if ((rank + step) % 2 == 1) std::reverse(mine.begin(), mine.end());
      std::vector<std::vector<float>> data(mine.size());
      std::vector<HandleId> ids;
      for (size_t i = 0; i < mine.size(); ++i) {
        data[i].assign(3000, static_cast<float>(rank * 10 + step));
        ids.push_back(session.enqueue(in_set(
            allreduce_entry("s" + std::to_string(mine[i]) + "." + std::to_string(step), data[i]),
            mine[i])));
      }
      for (size_t i = 0; i < mine.size(); ++i) {
        handles.wait(ids[i]);
        const float want = sum_over(pairs[static_cast<size_t>(mine[i] - 1)],
                                    [&](int r) { return static_cast<float>(r * 10 + step); });
        EXPECT_EQ(data[i].front(), want) << "set " << mine[i] << " rank " << rank;
        EXPECT_EQ(data[i].back(), want) << "set " << mine[i] << " rank " << rank;
      }
    }
    if (rank == 1) {
      EXPECT_FALSE(handles.poll(held_id)) << "rank 0 never submitted 'held'";
      held_checked = true;
    }
    if (rank == 0) {
      while (!held_checked) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::vector<float> late(4, 0.0f);
      HandleId late_id = session.enqueue(in_set(allreduce_entry("held", late), 1));
      handles.wait(late_id);
      EXPECT_EQ(late[0], 1.0f);
    }
    if (rank == 1) {
      handles.wait(held_id);
      EXPECT_EQ(held[0], 1.0f);
    }

    // Broadcast within a set: the root is a job rank.
    if (rank != 0) {
      std::vector<float> value(5, static_cast<float>(rank));
      TensorEntry entry = in_set(allreduce_entry("bcast", value), 2);
      entry.request.op = negotiation::OpType::broadcast;
      entry.request.root = 2;
      handles.wait(session.enqueue(std::move(entry)));
      EXPECT_EQ(value[0], 2.0f);
    }
    // One rank's shutdown ends the job's operations everywhere: finish together.
    std::vector<float> done(1, 1.0f);
    handles.wait(session.enqueue(allreduce_entry("done", done)));
    EXPECT_EQ(done[0], 3.0f);
  });
}

TEST(SessionProcessSets, NonMemberFailsAtOnceNamingSetRanksAndRank) {
  Job job;
  job.run(3, test_config(), [&](int rank, Session& session, HandleTable& handles) {
    EXPECT_EQ(number_of(handles, session.request_add_process_set({1, 0})), 1);
    std::vector<float> data(2, 1.0f);
    if (rank == 2) {
      try {
        (void)session.enqueue(in_set(allreduce_entry("outsider", data), 1));
        ADD_FAILURE() << "a non-member submitted on set 1";
      } catch (const InvalidArgument& error) {
        const std::string text = error.what();
        EXPECT_NE(text.find("rank 2 is not a member of process set 1 (ranks [0, 1])"),
                  std::string::npos)
            << text;
        EXPECT_NE(text.find("'outsider'"), std::string::npos) << text;
      }
    }
    EXPECT_THROW((void)session.enqueue(in_set(allreduce_entry("unknown", data), 7)),
                 InvalidArgument);
    EXPECT_THROW((void)session.request_add_process_set({0, 3}), InvalidArgument);
    // Adding the same ranks again fails on every rank, from agreed state.
    EXPECT_THROW(number_of(handles, session.request_add_process_set({0, 1})), Error);
  });
}

TEST(SessionProcessSets, RemovalIsRefusedWhileAMemberHasPendingOpsThenSucceeds) {
  Job job;
  job.run(3, test_config(), [&](int rank, Session& session, HandleTable& handles) {
    EXPECT_EQ(number_of(handles, session.request_add_process_set({0, 1})), 1);
    std::vector<float> data(3, 2.0f);
    HandleId pending = 0;
    if (rank == 0) pending = session.enqueue(in_set(allreduce_entry("pending", data), 1));
    try {
      (void)number_of(handles, session.request_remove_process_set(1));
      ADD_FAILURE() << "removed a set with an operation pending on rank 0";
    } catch (const Error& error) {
      const std::string text = error.what();
      EXPECT_NE(text.find("process set 1 cannot be removed: rank 0 still has"), std::string::npos)
          << text;
    }
    if (rank == 1) pending = session.enqueue(in_set(allreduce_entry("pending", data), 1));
    if (rank != 2) {
      handles.wait(pending);
      EXPECT_EQ(data[0], 4.0f);
    }
    EXPECT_EQ(number_of(handles, session.request_remove_process_set(1)), 1);
    EXPECT_EQ(session.process_set_ids(), (std::vector<int32_t>{0}));
    if (rank != 2) {
      EXPECT_THROW((void)session.enqueue(in_set(allreduce_entry("gone", data), 1)),
                   InvalidArgument);
    }
    // A removed set's id is handed out again (Horovod's order); the new set 1 starts afresh:
    // the name its predecessor used runs again, on the new members only.
    EXPECT_EQ(number_of(handles, session.request_add_process_set({1, 2})), 1);
    if (rank != 0) {
      std::fill(data.begin(), data.end(), 2.0f);
      handles.wait(session.enqueue(in_set(allreduce_entry("pending", data), 1)));
      EXPECT_EQ(data[0], 4.0f);
    }
    EXPECT_EQ(number_of(handles, session.request_add_process_set({0, 1})), 2);
  });
}

TEST(SessionJoin, JoinedRanksContributeZerosUntilEveryRankJoined) {
  Job job;
  job.run(3, test_config(), [&](int rank, Session& session, HandleTable& handles) {
    // Rank r runs r + 2 allreduce steps (Average), then joins: the first two steps are cached
    // on every rank, so later steps have cache hits on the ranks still running while the joined
    // rank sets no bit (they must go through the coordinator instead).
    for (int step = 0; step < rank + 2; ++step) {
      std::vector<float> data(100, static_cast<float>(rank + 1 + step));
      handles.wait(
          session.enqueue(allreduce_entry("grad", data, negotiation::UserReduceOp::average)));
      float want = 0;
      for (int r = 0; r < 3; ++r) {
        if (r + 2 > step) want += static_cast<float>(r + 1 + step);
      }
      want /= 3.0f;  // Average divides by the job's size, joined ranks included (Horovod)
      EXPECT_FLOAT_EQ(data[0], want) << "rank " << rank << " step " << step;
      EXPECT_FLOAT_EQ(data[99], want) << "rank " << rank << " step " << step;
    }
    EXPECT_EQ(number_of(handles, session.request_join()), 2);
    // After the join completed, all ranks take part again (and the cache works again).
    const uint64_t hits_before = session.stats().cache_hits;
    for (int step = 0; step < 3; ++step) {
      std::vector<float> data(10, 1.0f);
      handles.wait(session.enqueue(allreduce_entry("after", data)));
      EXPECT_EQ(data[0], 3.0f);
    }
    EXPECT_GE(session.stats().cache_hits - hits_before, 2u) << "rank " << rank;
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, SessionTest, ::testing::Values(1, 2, 3, 5));

}  // namespace
}  // namespace kolo::core
