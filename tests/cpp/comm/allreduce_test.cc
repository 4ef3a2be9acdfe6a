// allreduce (automatic, ring, recursive doubling, halving-doubling) for every dtype x op on 1..6
// ranks and element counts 0, 1, 7, 1000, 100003, against a reference folded in the test
// (halving-doubling also on 7, 8, 12 and 16 ranks); plus non-exact float sums (bitwise identical
// on every rank, close to the float64 result) and an ~8 MiB buffer.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

#include "base/errors.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"
#include "kernels/typed_values.h"

namespace kolo::comm {
namespace {

using testing::RankThreads;

const char* algorithm_name(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::automatic:
      return "automatic";
    case AllreduceAlgorithm::ring:
      return "ring";
    case AllreduceAlgorithm::recursive_doubling:
      return "recursive_doubling";
    case AllreduceAlgorithm::halving_doubling:
      return "halving_doubling";
    case AllreduceAlgorithm::hierarchical:
      return "hierarchical";
    case AllreduceAlgorithm::shared_memory:
      return "shared_memory";
  }
  return "?";
}

constexpr AllreduceAlgorithm kAlgorithms[] = {
    AllreduceAlgorithm::automatic, AllreduceAlgorithm::ring, AllreduceAlgorithm::recursive_doubling,
    AllreduceAlgorithm::halving_doubling};

class AllreduceExact : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(AllreduceExact, EveryTypeAndOpMatchesReference) {
  const auto [size, count] = GetParam();
  RankThreads group(size);
  for (const kernels::testing::ReferenceCase& c :
       kernels::testing::every_reference_case(size, count)) {
    group.run([&](Communicator& comm) {
      for (AllreduceAlgorithm algorithm : kAlgorithms) {
        auto data = c.inputs[comm.rank()];
        allreduce(comm, data, count, c.type, c.op, {algorithm, size_t{64} * 1024});
        const std::string difference = kernels::testing::first_difference(data, c.expected, c.type);
        EXPECT_EQ(difference, "") << "rank " << comm.rank() << " " << algorithm_name(algorithm)
                                  << " " << dtype_name(c.type) << " " << reduce_op_name(c.op);
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(SizesAndCounts, AllreduceExact,
                         ::testing::Combine(::testing::Range(1, 7),
                                            ::testing::Values(size_t{0}, size_t{1}, size_t{7},
                                                              size_t{1000}, size_t{100003})));

// Halving-doubling on the group sizes where its structure changes: a power of two's core alone
// (8, 16), and extra ranks folded in (7: 3 of them, 12: 4). Counts below the rank count (empty
// blocks), odd counts whose halves differ by one element, and counts that no power of two divides.
class HalvingDoublingExact : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(HalvingDoublingExact, EveryTypeAndOpMatchesReference) {
  const auto [size, count] = GetParam();
  RankThreads group(size);
  for (const kernels::testing::ReferenceCase& c :
       kernels::testing::every_reference_case(size, count)) {
    group.run([&](Communicator& comm) {
      auto data = c.inputs[comm.rank()];
      allreduce_halving_doubling(comm, data, count, c.type, c.op);
      EXPECT_EQ(kernels::testing::first_difference(data, c.expected, c.type), "")
          << "rank " << comm.rank() << " " << dtype_name(c.type) << " " << reduce_op_name(c.op);
    });
  }
}

INSTANTIATE_TEST_SUITE_P(SizesAndCounts, HalvingDoublingExact,
                         ::testing::Combine(::testing::Values(7, 8, 12, 16),
                                            ::testing::Values(size_t{0}, size_t{1}, size_t{5},
                                                              size_t{13}, size_t{1001})));

// Arbitrary floats: the ring and recursive doubling fold in different orders, so compare with the
// float64 sum within rounding, and demand identical bits on every rank.
class AllreduceRounding : public ::testing::TestWithParam<std::tuple<int, DataType>> {};

TEST_P(AllreduceRounding, IdenticalOnEveryRankAndCloseToFloat64) {
  const auto [size, type] = GetParam();
  const size_t count = 100003;
  std::vector<std::vector<std::byte>> inputs;
  std::vector<double> exact(count, 0.0);
  const size_t element = dtype_size(type);
  for (int r = 0; r < size; ++r) {
    std::vector<std::byte> data(count * element);
    for (size_t i = 0; i < count; ++i) {
      const double value =
          static_cast<double>(kernels::testing::mix(r * 7777777ull + i) % 2000001) / 1e6 - 1.0;
      kernels::testing::store_float(data.data() + i * element, type, value);
      exact[i] += kernels::testing::load_float(data.data() + i * element, type);
    }
    inputs.push_back(std::move(data));
  }
  const double epsilon = type == DataType::float16    ? std::ldexp(1.0, -10)
                         : type == DataType::bfloat16 ? std::ldexp(1.0, -7)
                                                      : std::ldexp(1.0, -23);
  // |partial sums| <= size and each of size-1 additions rounds once.
  const double tolerance = size * size * epsilon;
  for (AllreduceAlgorithm algorithm :
       {AllreduceAlgorithm::ring, AllreduceAlgorithm::recursive_doubling,
        AllreduceAlgorithm::halving_doubling}) {
    std::vector<std::vector<std::byte>> results(static_cast<size_t>(size));
    RankThreads group(size);
    group.run([&](Communicator& comm) {
      auto data = inputs[comm.rank()];
      allreduce(comm, data, count, type, ReduceOp::sum, {algorithm, 0});
      results[comm.rank()] = std::move(data);
    });
    for (int r = 1; r < size; ++r) {
      EXPECT_TRUE(results[r] == results[0])
          << algorithm_name(algorithm) << ": rank " << r << " differs from rank 0";
    }
    size_t bad = 0;
    for (size_t i = 0; i < count && bad < 5; ++i) {
      const double got = kernels::testing::load_float(results[0].data() + i * element, type);
      if (!(std::fabs(got - exact[i]) <= tolerance)) {
        ++bad;
        ADD_FAILURE() << algorithm_name(algorithm) << " element " << i << ": " << got
                      << " vs float64 " << exact[i];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SizesAndTypes, AllreduceRounding,
                         ::testing::Combine(::testing::Values(2, 3, 5, 6, 8, 12),
                                            ::testing::Values(DataType::float16, DataType::bfloat16,
                                                              DataType::float32)));

std::vector<std::vector<std::byte>> float32_sum_inputs(int size, size_t count) {
  std::vector<std::vector<std::byte>> inputs;
  for (int r = 0; r < size; ++r) {
    inputs.push_back(kernels::testing::make_input(DataType::float32, ReduceOp::sum, r, count));
  }
  return inputs;
}

TEST(AllreduceLarge, EightMebibytesFloat32) {
  const size_t count = (8u << 20) / 4 + 3;  // not a multiple of any group size
  for (int size : {2, 3, 5}) {
    const auto inputs = float32_sum_inputs(size, count);
    const auto expected =
        kernels::testing::reference_reduce(inputs, DataType::float32, ReduceOp::sum);
    RankThreads group(size);
    for (AllreduceAlgorithm algorithm : kAlgorithms) {
      group.run([&](Communicator& comm) {
        auto data = inputs[comm.rank()];
        allreduce(comm, data, count, DataType::float32, ReduceOp::sum, {algorithm, 64 * 1024});
        EXPECT_EQ(kernels::testing::first_difference(data, expected, DataType::float32), "")
            << "size " << size << " rank " << comm.rank() << " " << algorithm_name(algorithm);
      });
    }
  }
}

// Past 4 ranks automatic choice keeps recursive doubling above the configured limit, and from 8
// ranks runs halving-doubling above it (allreduce_choice.h): sizes on every side of the limits,
// on 8, 12 and 16 ranks, give the reference result on every rank. 12 ranks: recursive doubling
// below 78 KiB, halving-doubling to 140 KiB, the ring beyond.
TEST(AllreduceLarge, AutomaticAcrossTheScaledLimitsOnEightTwelveAndSixteenRanks) {
  for (int size : {8, 12, 16}) {
    // 70 KB, 120 KB and 200 KB of float32
    for (size_t count : {size_t{17500}, size_t{30001}, size_t{50001}}) {
      const auto inputs = float32_sum_inputs(size, count);
      const auto expected =
          kernels::testing::reference_reduce(inputs, DataType::float32, ReduceOp::sum);
      RankThreads group(size);
      group.run([&](Communicator& comm) {
        auto data = inputs[comm.rank()];
        allreduce(comm, data, count, DataType::float32, ReduceOp::sum);
        EXPECT_EQ(kernels::testing::first_difference(data, expected, DataType::float32), "")
            << "size " << size << " count " << count << " rank " << comm.rank();
      });
    }
  }
}

TEST(AllreduceArguments, FailBeforeAnyTraffic) {
  RankThreads group(2);
  std::vector<std::byte> data(16);
  // Bitwise op on floats and a buffer too small are refused locally, on each rank on its own.
  EXPECT_THROW(allreduce(group.comm(0), data, 4, DataType::float32, ReduceOp::bitwise_or),
               InvalidArgument);
  EXPECT_THROW(allreduce(group.comm(0), data, 5, DataType::float32, ReduceOp::sum),
               InvalidArgument);
  EXPECT_THROW(allreduce_ring(group.comm(1), data, 3, DataType::float64, ReduceOp::sum),
               InvalidArgument);
}

// Manual benchmark (run with --gtest_also_run_disabled_tests): 64 MiB float32 on 2 ranks.
TEST(AllreducePerf, DISABLED_Ring64MiBTwoRanks) {
  const size_t count = (64u << 20) / 4;
  for (int size : {2, 4}) {
    RankThreads group(size);
    std::vector<std::vector<std::byte>> buffers;
    for (int r = 0; r < size; ++r) buffers.emplace_back(count * 4, std::byte{0});
    for (AllreduceAlgorithm algorithm :
         {AllreduceAlgorithm::ring, AllreduceAlgorithm::recursive_doubling,
          AllreduceAlgorithm::halving_doubling}) {
      for (int iteration = 0; iteration < 4; ++iteration) {
        const auto start = std::chrono::steady_clock::now();
        group.run([&](Communicator& comm) {
          allreduce(comm, buffers[comm.rank()], count, DataType::float32, ReduceOp::sum,
                    {algorithm, 0});
        });
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        std::printf("%d ranks %s 64 MiB float32: %.1f ms (algbw %.2f GB/s)\n", size,
                    algorithm_name(algorithm), ms, (64.0 * (1 << 20)) / ms / 1e6);
      }
    }
  }
}

// Manual benchmark: latency of a 2-rank allreduce of one float64 (recursive doubling).
TEST(AllreducePerf, DISABLED_SmallMessageLatencyTwoRanks) {
  RankThreads group(2);
  const int iterations = 5000;
  const auto start = std::chrono::steady_clock::now();
  group.run([&](Communicator& comm) {
    double value = comm.rank() + 1.0;
    for (int i = 0; i < iterations; ++i) {
      allreduce(comm, std::as_writable_bytes(std::span(&value, 1)), 1, DataType::float64,
                ReduceOp::max);
    }
    EXPECT_EQ(value, 2.0);
  });
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      iterations;
  std::printf("2 ranks 8-byte allreduce: %.1f us\n", us);
}

}  // namespace
}  // namespace kolo::comm
