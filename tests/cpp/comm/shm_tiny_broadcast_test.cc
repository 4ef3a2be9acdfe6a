// Tiny broadcasts over shared-memory links, which travel through the links' fast boxes
// (transport/shm/fastbox.h): 2, 3 and 4 ranks, every root, sizes at and around each line
// boundary, back to back from changing roots and interleaved with other collectives; and a root
// that dies or stays silent while a receiver waits on its fast box.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "base/errors.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"
#include "transport/shm/fastbox.h"

namespace kolo::comm {
namespace {

using namespace std::chrono_literals;
using testing::LinkKind;
using testing::RankThreads;

constexpr size_t kLine = transport::shm::kFastboxPayload;

std::byte byte_of(int root, size_t size, size_t i) {
  return std::byte(static_cast<uint8_t>(root * 31 + size * 3 + i * 13));
}

std::vector<size_t> boundary_sizes() {
  std::vector<size_t> sizes;
  for (size_t lines = 1; lines <= 5; ++lines) {
    for (size_t size : {lines * kLine - 1, lines * kLine, lines * kLine + 1}) sizes.push_back(size);
  }
  for (size_t size : {size_t{1}, size_t{8}, size_t{64}, size_t{512}, size_t{4096}}) {
    sizes.push_back(size);
  }
  return sizes;
}

class TinyBroadcast : public ::testing::TestWithParam<int> {};

TEST_P(TinyBroadcast, EveryRootAroundEveryLineBoundaryInterleaved) {
  const int n = GetParam();
  RankThreads group(n, LinkKind::shm, 4096);
  const auto sizes = boundary_sizes();
  group.run([&](Communicator& comm) {
    for (int repeat = 0; repeat < 40; ++repeat) {  // many times around every fast box
      for (size_t size : sizes) {
        for (int root = 0; root < n; ++root) {
          std::vector<std::byte> data(size, std::byte{0});
          if (comm.rank() == root) {
            for (size_t i = 0; i < size; ++i) data[i] = byte_of(root, size, i);
          }
          broadcast(comm, data, root);
          for (size_t i = 0; i < size; ++i) {
            if (data[i] != byte_of(root, size, i)) {
              FAIL() << "rank " << comm.rank() << " root " << root << " size " << size
                     << ": wrong byte at " << i;
            }
          }
        }
        // Another collective between broadcasts: its bytes share the links' streams.
        if (size % 3 == 0) {
          std::vector<float> sum(size % 7 + 1, 1.0f);
          allreduce(comm, std::as_writable_bytes(std::span(sum)), sum.size(), DataType::float32,
                    ReduceOp::sum);
          for (float v : sum) ASSERT_EQ(v, static_cast<float>(n)) << "size " << size;
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, TinyBroadcast, ::testing::Values(2, 3, 4));

TEST(TinyBroadcastFailure, RootThatDiesIsNamedByTheWaitingReceivers) {
  RankThreads group(3, LinkKind::shm);
  const auto start = std::chrono::steady_clock::now();
  const auto errors = group.run_collect([](Communicator& comm) {
    std::vector<std::byte> data(8);
    for (int i = 0; i < 100; ++i) broadcast(comm, data, 0);
    if (comm.rank() == 0) {
      std::this_thread::sleep_for(200ms);  // the receivers are asleep on the fast box by now
      comm.abort();                        // as a dying process: its lifelines close
      return;
    }
    broadcast(comm, data, 0);
  });
  for (int r = 1; r < 3; ++r) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " did not notice rank 0 dying";
    EXPECT_GE(testing::peer_of(errors[r]), 0) << testing::describe(errors[r]);
  }
  EXPECT_TRUE(testing::peer_of(errors[1]) == 0 || testing::peer_of(errors[2]) == 0)
      << testing::describe(errors[1]) << " / " << testing::describe(errors[2]);
  EXPECT_LT(testing::seconds_since(start), 10.0);  // far below the 20 s peer timeout
}

TEST(TinyBroadcastFailure, SilentRootIsNamedAfterThePeerTimeout) {
  CommunicatorOptions options = testing::default_test_options();
  options.peer_timeout = 500ms;
  RankThreads group(2, LinkKind::shm, 64 * 1024, options);
  const auto errors = group.run_collect(
      [](Communicator& comm) {
        std::vector<std::byte> data(8);
        for (int i = 0; i < 100; ++i) broadcast(comm, data, 0);
        if (comm.rank() == 0) return;  // stops sending, link still open
        broadcast(comm, data, 0);
      },
      /*abort_on_error=*/false);
  EXPECT_FALSE(errors[0]);
  ASSERT_TRUE(errors[1]);
  EXPECT_EQ(testing::peer_of(errors[1]), 0) << testing::describe(errors[1]);
  EXPECT_NE(testing::describe(errors[1]).find("no progress"), std::string::npos)
      << testing::describe(errors[1]);
}

}  // namespace
}  // namespace kolo::comm
