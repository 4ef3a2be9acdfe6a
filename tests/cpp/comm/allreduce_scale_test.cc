// allreduce with a result scale (Average's division, a postscale): every algorithm applies it
// once per element where the element's total is computed (its own slice in the arena, its chunk
// in the ring, its block in halving-doubling, the cross-host stage in the hierarchical one), and
// every rank must end with exactly the bits of the unscaled sum followed by one pass of
// average_buffer / scale_buffer over the whole result. An impossible scale (a boolean average)
// fails on every rank before any byte moves, so no rank waits for another.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/errors.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"
#include "kernels/reduce.h"
#include "kernels/typed_values.h"

namespace kolo::comm {
namespace {

using testing::LinkKind;
using testing::RankThreads;

struct ScaleCase {
  DataType type;
  kernels::ResultScale scale;
};

// Average over the group (the executor's case), Average with a postscale, a postscale alone;
// float32 (the gradients' type), float64, float16 (scaled in float32) and int32 (truncated).
std::vector<ScaleCase> scale_cases(int size) {
  std::vector<ScaleCase> cases;
  for (DataType type : {DataType::float32, DataType::float64, DataType::float16, DataType::int32}) {
    cases.push_back({type, {.average_over = size}});
    cases.push_back({type, {.average_over = size, .postscale = 0.75}});
    cases.push_back({type, {.postscale = 0.5}});
  }
  return cases;
}

// The sum over every rank's input, then the scale over the whole of it in one pass.
std::vector<std::byte> scaled_reference(int size, size_t count, const ScaleCase& c) {
  std::vector<std::vector<std::byte>> inputs;
  for (int r = 0; r < size; ++r) {
    inputs.push_back(kernels::testing::make_input(c.type, ReduceOp::sum, r, count));
  }
  std::vector<std::byte> expected =
      kernels::testing::reference_reduce(inputs, c.type, ReduceOp::sum);
  c.scale.apply(expected.data(), count, c.type);
  return expected;
}

void expect_scaled_sums(RankThreads& group, int size, const std::vector<size_t>& counts,
                        const AllreduceOptions& options, const std::string& what) {
  for (size_t count : counts) {
    for (const ScaleCase& c : scale_cases(size)) {
      const std::vector<std::byte> expected = scaled_reference(size, count, c);
      group.run([&](Communicator& comm) {
        auto data = kernels::testing::make_input(c.type, ReduceOp::sum, comm.rank(), count);
        allreduce(comm, data, count, c.type, ReduceOp::sum, options, c.scale);
        EXPECT_EQ(kernels::testing::first_difference(data, expected, c.type), "")
            << what << " size " << size << " count " << count << " rank " << comm.rank() << " "
            << dtype_name(c.type) << " average over " << c.scale.average_over << " postscale "
            << c.scale.postscale;
      });
    }
  }
}

const std::vector<size_t> kCounts = {0, 1, 7, 1000, 100003};

TEST(AllreduceScale, RingRecursiveDoublingAndHalvingDoublingOnOneToSixRanks) {
  for (int size = 1; size <= 6; ++size) {
    RankThreads group(size);
    for (AllreduceAlgorithm algorithm :
         {AllreduceAlgorithm::ring, AllreduceAlgorithm::recursive_doubling,
          AllreduceAlgorithm::halving_doubling, AllreduceAlgorithm::automatic}) {
      expect_scaled_sums(group, size, kCounts, {algorithm},
                         "algorithm " + std::to_string(static_cast<int>(algorithm)));
    }
  }
}

TEST(AllreduceScale, HalvingDoublingWithExtraRanks) {
  for (int size : {7, 12}) {  // 3 and 4 extra ranks folded into the core and handed the result
    RankThreads group(size);
    expect_scaled_sums(group, size, {1, 11, 100003}, {AllreduceAlgorithm::halving_doubling},
                       "halving_doubling");
  }
}

TEST(AllreduceScale, SharedMemoryArenaWholeAndSlicedPieces) {
  // 32 KiB per slot half: 4095 floats fold whole, 4100 take the sliced path (over 16 KiB),
  // 100003 run 13 steps.
  constexpr size_t kChunk = size_t{32} * 1024;
  for (int size : {2, 3, 4}) {  // an arena has two ranks or more
    RankThreads group(std::vector<CommunicatorOptions>(static_cast<size_t>(size),
                                                       testing::default_test_options()),
                      LinkKind::socket, size_t{64} * 1024, std::nullopt, kChunk);
    expect_scaled_sums(group, size, {0, 1, 7, 4095, 4100, 100003},
                       {AllreduceAlgorithm::shared_memory}, "shared_memory");
  }
}

TEST(AllreduceScale, HierarchicalStripedAndLeaderPaths) {
  for (std::vector<int> host_of_rank :
       {std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 1, 1, 1, 2}, std::vector<int>{0, 0, 1}}) {
    Topology topology;
    topology.host_of_rank = host_of_rank;
    const int size = static_cast<int>(host_of_rank.size());
    RankThreads group(std::vector<CommunicatorOptions>(static_cast<size_t>(size),
                                                       testing::default_test_options()),
                      LinkKind::shm, 64 * 1024, topology);
    expect_scaled_sums(group, size, {1, 3, 1001, 100003}, {AllreduceAlgorithm::hierarchical},
                       "hierarchical");
  }
}

TEST(AllreduceScale, ImpossibleScaleFailsOnEveryRankBeforeAnyTraffic) {
  // A rank that threw halfway (after its own slice) would leave the others waiting for it; every
  // rank refuses up front instead, and the group still works afterwards.
  for (AllreduceAlgorithm algorithm :
       {AllreduceAlgorithm::ring, AllreduceAlgorithm::recursive_doubling,
        AllreduceAlgorithm::halving_doubling, AllreduceAlgorithm::shared_memory}) {
    RankThreads group(std::vector<CommunicatorOptions>(3, testing::default_test_options()),
                      LinkKind::socket, size_t{64} * 1024, std::nullopt, size_t{16} * 1024);
    const auto errors = group.run_collect(
        [&](Communicator& comm) {
          std::vector<std::byte> flags(100000, std::byte{1});
          allreduce(comm, flags, flags.size(), DataType::boolean, ReduceOp::sum, {algorithm},
                    {.average_over = 3});
        },
        /*abort_on_error=*/false);
    for (int r = 0; r < 3; ++r) {
      ASSERT_NE(errors[static_cast<size_t>(r)], nullptr) << "rank " << r;
      EXPECT_NE(testing::describe(errors[static_cast<size_t>(r)]).find("cannot average bool"),
                std::string::npos)
          << testing::describe(errors[static_cast<size_t>(r)]);
    }
    group.run([&](Communicator& comm) {
      std::vector<float> one = {1.0f};
      allreduce(comm, std::as_writable_bytes(std::span(one)), 1, DataType::float32, ReduceOp::sum,
                {algorithm}, {.average_over = 3});
      EXPECT_EQ(one[0], 1.0f);
    });
  }
}

}  // namespace
}  // namespace kolo::comm
