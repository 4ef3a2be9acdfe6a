// More ranks on a host than CPUs: from 1 MiB, allreduce and broadcast read the peers' buffers
// straight from their memory in a few flag rounds (allreduce_single_copy, broadcast_single_copy)
// instead of the ring or chain over the links. allreduce_single_copy folds every element in rank
// order on 2 and 3 ranks (the same bits as that fold done alone), for every slice cut (fewer
// elements than ranks included) and with Average's scale; the automatic choice takes these paths
// only when oversubscribed (the single-copy probe runs), and the results are right either way.
// Threads as ranks: process_vm_readv(2) on its own pid reads this process, as a peer's read would.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "comm/collective_arena.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"
#include "comm/single_copy.h"
#include "kernels/reduce.h"

namespace kolo::comm {
namespace {

using testing::LinkKind;
using testing::RankThreads;
using SingleCopy = CollectiveArena::SingleCopy;

RankThreads host_ranks(int n, int host_cpus) {
  CommunicatorOptions options = testing::default_test_options();
  options.host_cpus = host_cpus;
  return RankThreads(std::vector<CommunicatorOptions>(static_cast<size_t>(n), options),
                     LinkKind::shm, size_t{64} * 1024, std::nullopt, size_t{16} * 1024, SIZE_MAX);
}

std::vector<float> random_values(int rank, size_t count) {
  std::mt19937 random(static_cast<unsigned>(11 + rank));
  std::uniform_real_distribution<float> value(-100.0f, 100.0f);
  std::vector<float> values(count);
  for (float& x : values) x = value(random);
  return values;
}

class SingleCopyAllreduce : public ::testing::TestWithParam<std::tuple<int, size_t, ReduceOp>> {};

TEST_P(SingleCopyAllreduce, FoldsEveryElementInRankOrder) {
  const auto [size, count, op] = GetParam();
  auto group = host_ranks(size, 64);
  const kernels::ResultScale average{.average_over = size};
  const kernels::ReduceFn combine = kernels::reduce_function(DataType::float32, op);
  // What every rank must get: rank 0's values folded with rank 1's, then rank 2's, scaled.
  std::vector<float> expected = random_values(0, count);
  for (int r = 1; r < size; ++r) combine(expected.data(), random_values(r, count).data(), count);
  average.apply(expected.data(), count, DataType::float32);
  group.run([&](Communicator& comm) {
    ASSERT_TRUE(detail::single_copy_usable(comm, *comm.arena()));
    std::vector<float> data = random_values(comm.rank(), count);
    allreduce_single_copy(comm, std::as_writable_bytes(std::span(data)), count, DataType::float32,
                          op, average);
    ASSERT_EQ(std::memcmp(data.data(), expected.data(), count * sizeof(float)), 0)
        << "rank " << comm.rank() << " of " << size << ", " << count << " elements";
  });
}

INSTANTIATE_TEST_SUITE_P(Cuts, SingleCopyAllreduce,
                         ::testing::Combine(::testing::Values(2, 3),
                                            ::testing::Values(size_t{1}, size_t{2}, size_t{7},
                                                              size_t{100003}),
                                            ::testing::Values(ReduceOp::sum, ReduceOp::max)));

// allreduce() and broadcast() of 2 MiB on 3 ranks: the results, and whether the automatic choice
// probed single copies (allreduce: only the oversubscribed path does at this size, the arena's own
// allreduce reads nothing from peers' memory; broadcast: both, the arena's splits the copy
// between the root and the receivers).
constexpr size_t kCount = size_t{512} * 1024;

SingleCopy allreduce_2mib(Communicator& comm) {
  const int n = comm.size();
  std::vector<int32_t> data(kCount);
  for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<int32_t>(i % 1000) + comm.rank();
  allreduce(comm, std::as_writable_bytes(std::span(data)), kCount, DataType::int32, ReduceOp::sum);
  for (size_t i = 0; i < kCount; i += 997) {
    EXPECT_EQ(data[i], static_cast<int32_t>(n * (i % 1000) + n * (n - 1) / 2)) << i;
  }
  return comm.arena()->single_copy;
}

SingleCopy broadcast_2mib(Communicator& comm) {
  const int n = comm.size();
  std::vector<int32_t> data(kCount);
  for (int root = 0; root < n; ++root) {
    for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<int32_t>(i) * (comm.rank() + 1);
    broadcast(comm, std::as_writable_bytes(std::span(data)), root);
    for (size_t i = 0; i < kCount; i += 997) {
      EXPECT_EQ(data[i], static_cast<int32_t>(i) * (root + 1)) << "root " << root << " at " << i;
    }
  }
  return comm.arena()->single_copy;
}

SingleCopy allreduce_and_broadcast(Communicator& comm) {
  allreduce_2mib(comm);
  return broadcast_2mib(comm);
}

TEST(OversubscribedHost, LargeAllreduceAndBroadcastReadPeersMemory) {
  auto group = host_ranks(3, 2);
  group.run([&](Communicator& comm) {
    ASSERT_TRUE(comm.oversubscribed());
    comm.arena()->single_copy_measured = false;  // reads, whatever they cost on this machine
    EXPECT_EQ(allreduce_2mib(comm), SingleCopy::usable);
    EXPECT_EQ(broadcast_2mib(comm), SingleCopy::usable);
  });
}

TEST(OversubscribedHost, ACpuPerRankKeepsTheArenaAlgorithms) {
  auto group = host_ranks(3, 64);
  group.run([&](Communicator& comm) {
    ASSERT_FALSE(comm.oversubscribed());
    EXPECT_EQ(allreduce_2mib(comm), SingleCopy::unknown);
    EXPECT_EQ(broadcast_2mib(comm), SingleCopy::usable);  // the arena's split copy
  });
}

TEST(OversubscribedHost, WithoutSingleCopiesTheLinksCarryThem) {
  auto group = host_ranks(3, 2);
  group.run([&](Communicator& comm) {
    comm.arena()->single_copy_allowed = comm.rank() != 2;
    EXPECT_EQ(allreduce_and_broadcast(comm), SingleCopy::unusable);
  });
}

}  // namespace
}  // namespace kolo::comm
