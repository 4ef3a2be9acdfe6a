// Hierarchical allreduce with ranks split over fake hosts: even hosts (striped path), uneven
// hosts (leader path), one rank per host and all on one host (flat fallbacks), 8 hosts (the
// cross-host stage through halving-doubling); every dtype's result matches the reference and is
// identical on every rank. Also the automatic choice.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/collectives.h"
#include "comm/rank_threads.h"
#include "kernels/typed_values.h"

namespace kolo::comm {
namespace {

using testing::LinkKind;
using testing::RankThreads;

Topology hosts(std::vector<int> host_of_rank) {
  Topology topology;
  topology.host_of_rank = std::move(host_of_rank);
  return topology;
}

class Hierarchy : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(Hierarchy, MatchesReferenceForCountsAndTypes) {
  const Topology topology = hosts(GetParam());
  const int n = static_cast<int>(topology.host_of_rank.size());
  RankThreads ranks(
      std::vector<CommunicatorOptions>(static_cast<size_t>(n), testing::default_test_options()),
      LinkKind::shm, 64 * 1024, topology);
  for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{1001}, size_t{300007}}) {
    for (auto [type, op] :
         {std::pair{DataType::float32, ReduceOp::sum}, std::pair{DataType::int64, ReduceOp::min},
          std::pair{DataType::bfloat16, ReduceOp::max}}) {
      std::vector<std::vector<std::byte>> inputs;
      for (int r = 0; r < n; ++r)
        inputs.push_back(kernels::testing::make_input(type, op, r, count));
      const auto expected = kernels::testing::reference_reduce(inputs, type, op);
      ranks.run([&](Communicator& comm) {
        auto data = inputs[comm.rank()];
        allreduce(comm, data, count, type, op, {AllreduceAlgorithm::hierarchical, 64 * 1024});
        EXPECT_EQ(kernels::testing::first_difference(data, expected, type), "")
            << "rank " << comm.rank() << " count " << count << " " << dtype_name(type);
      });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    FakeHosts, Hierarchy,
    ::testing::Values(std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 1, 0, 1},
                      std::vector<int>{0, 0, 0, 1, 1, 1}, std::vector<int>{0, 0, 1},
                      std::vector<int>{0, 1, 1, 1, 2}, std::vector<int>{0, 1, 2},
                      std::vector<int>{0, 0, 0},
                      // 8 hosts: the cross-host stage of the larger counts runs
                      // halving-doubling (striped and leaders).
                      std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7},
                      std::vector<int>{0, 0, 1, 2, 3, 4, 5, 6, 7}));

TEST(Hierarchy, AppliesOnlyWithSeveralHostsAndSharedHosts) {
  auto applies = [](std::vector<int> layout) {
    const int n = static_cast<int>(layout.size());
    RankThreads ranks(
        std::vector<CommunicatorOptions>(static_cast<size_t>(n), testing::default_test_options()),
        LinkKind::socket, 0, hosts(std::move(layout)));
    return hierarchical_applies(ranks.comm(0));
  };
  EXPECT_TRUE(applies({0, 0, 1, 1}));
  EXPECT_TRUE(applies({0, 1, 1}));
  EXPECT_FALSE(applies({0, 1, 2}));
  EXPECT_FALSE(applies({0, 0, 0}));
}

TEST(Hierarchy, FloatSumsIdenticalOnEveryRank) {
  const Topology topology = hosts({0, 0, 1, 1, 1});
  RankThreads ranks(std::vector<CommunicatorOptions>(5, testing::default_test_options()),
                    LinkKind::shm, 64 * 1024, topology);
  const size_t count = 50001;
  std::vector<std::vector<float>> results(5);
  ranks.run([&](Communicator& comm) {
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = 1.0f / static_cast<float>(i + comm.rank() + 3);
    allreduce(comm, {reinterpret_cast<std::byte*>(data.data()), count * 4}, count,
              DataType::float32, ReduceOp::sum);  // automatic: hierarchical applies here
    results[comm.rank()] = data;
  });
  for (int r = 1; r < 5; ++r) EXPECT_TRUE(results[r] == results[0]) << "rank " << r;
}

}  // namespace
}  // namespace kolo::comm
