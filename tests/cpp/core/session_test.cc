// The whole runtime below Python: N sessions in one process (threads), joined through a real
// authenticated rendezvous server and TCP mesh on loopback.
#include "core/session.h"

#include <gtest/gtest.h>

#include <algorithm>
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
  void run(int size, const Config& config,
           const std::function<void(int, Session&, HandleTable&)>& body) {
    std::vector<std::thread> threads;
    std::vector<std::string> failures(size);
    for (int rank = 0; rank < size; ++rank) {
      threads.emplace_back([&, rank] {
        try {
          LaunchInfo launch;
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
  entry.request.dtype = comm::DataType::float32;
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

INSTANTIATE_TEST_SUITE_P(Ranks, SessionTest, ::testing::Values(1, 2, 3, 5));

}  // namespace
}  // namespace kolo::core
