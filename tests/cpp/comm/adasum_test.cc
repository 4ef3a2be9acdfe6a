// Adasum over in-process ranks: the distributed recursive-halving result against the pairwise
// reference tree (adasum_combine on whole vectors, extra ranks folded first), on 1..6 ranks
// (powers of two and not), odd lengths, every floating-point type; identical on every rank.
#include "comm/adasum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "base/errors.h"
#include "comm/rank_threads.h"
#include "kernels/reduce.h"

namespace kolo::comm {
namespace {

using testing::RankThreads;

std::vector<double> vector_of(int rank, size_t length) {
  std::mt19937 gen(static_cast<uint32_t>(rank * 7919 + length));
  std::normal_distribution<double> dist(0.0, 1.0 + rank);
  std::vector<double> v(length);
  for (double& x : v) x = dist(gen);
  return v;
}

std::vector<std::byte> encode(const std::vector<double>& values, DataType type) {
  std::vector<std::byte> out(values.size() * dtype_size(type));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DataType::float64) {
      std::memcpy(out.data() + 8 * i, &values[i], 8);
    } else if (type == DataType::float32) {
      const auto f = static_cast<float>(values[i]);
      std::memcpy(out.data() + 4 * i, &f, 4);
    } else {
      const uint16_t h = type == DataType::float16
                             ? kernels::float_to_half(static_cast<float>(values[i]))
                             : kernels::float_to_bfloat16(static_cast<float>(values[i]));
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

double value_at(const std::vector<std::byte>& bytes, DataType type, size_t i) {
  if (type == DataType::float64) {
    double d = 0;
    std::memcpy(&d, bytes.data() + 8 * i, 8);
    return d;
  }
  if (type == DataType::float32) {
    float f = 0;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
  }
  uint16_t h = 0;
  std::memcpy(&h, bytes.data() + 2 * i, 2);
  return type == DataType::float16 ? kernels::half_to_float(h) : kernels::bfloat16_to_float(h);
}

// The tree Adasum defines, one pairwise combination at a time on whole vectors.
std::vector<std::byte> reference(int n, size_t length, DataType type) {
  std::vector<std::vector<std::byte>> v;
  for (int r = 0; r < n; ++r) v.push_back(encode(vector_of(r, length), type));
  int p = 1;
  while (p * 2 <= n) p *= 2;
  for (int i = 0; i + p < n; ++i) adasum_combine(v[i].data(), v[i + p].data(), length, type);
  for (int d = 1; d < p; d *= 2) {
    for (int base = 0; base < p; base += 2 * d) {
      adasum_combine(v[base].data(), v[base + d].data(), length, type);
    }
  }
  return v[0];
}

double tolerance(DataType type) {
  switch (type) {
    case DataType::float64:
      return 1e-12;
    case DataType::float32:
      return 1e-5;
    case DataType::float16:
      return 1e-2;
    default:
      return 2e-2;  // bfloat16
  }
}

struct Case {
  int ranks;
  DataType type;
};

class AdasumRanks : public ::testing::TestWithParam<Case> {};

TEST_P(AdasumRanks, MatchesPairwiseTreeAndAgreesEverywhere) {
  const auto [n, type] = GetParam();
  for (size_t length : {size_t{1}, size_t{2}, size_t{7}, size_t{1001}}) {
    const std::vector<std::byte> want = reference(n, length, type);
    std::vector<std::vector<std::byte>> got(static_cast<size_t>(n));
    RankThreads group(n);
    ASSERT_TRUE(group.run([&](Communicator& comm) {
      std::vector<std::byte> data = encode(vector_of(comm.rank(), length), type);
      adasum(comm, data, length, type);
      got[static_cast<size_t>(comm.rank())] = std::move(data);
    }));
    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(got[r] == got[0]) << "rank " << r << " differs from rank 0, length " << length;
    }
    double scale = 1.0;
    for (size_t i = 0; i < length; ++i) scale = std::max(scale, std::abs(value_at(want, type, i)));
    for (size_t i = 0; i < length; ++i) {
      ASSERT_NEAR(value_at(got[0], type, i), value_at(want, type, i), tolerance(type) * scale)
          << dtype_name(type) << " on " << n << " ranks, length " << length << ", element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RanksAndTypes, AdasumRanks,
                         ::testing::Values(Case{1, DataType::float32}, Case{2, DataType::float32},
                                           Case{3, DataType::float32}, Case{4, DataType::float64},
                                           Case{5, DataType::float64}, Case{6, DataType::float16},
                                           Case{4, DataType::bfloat16}, Case{3, DataType::float16}),
                         [](const auto& info) {
                           return std::to_string(info.param.ranks) + "ranks_" +
                                  std::string(dtype_name(info.param.type));
                         });

// The MPI backend's path: every rank's whole vector gathered, the tree run on one rank. Same
// folds and per-level roundings as the pairwise reference, so bit-identical to it; and close to
// the distributed result (tested against the same reference above).
TEST(AdasumGathered, EqualsThePairwiseTree) {
  for (const auto [n, type] :
       {Case{1, DataType::float32}, Case{2, DataType::float32}, Case{3, DataType::float16},
        Case{4, DataType::float64}, Case{5, DataType::bfloat16}, Case{6, DataType::float64}}) {
    for (size_t length : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}}) {
      std::vector<std::byte> gathered;
      for (int r = 0; r < n; ++r) {
        const auto block = encode(vector_of(r, length), type);
        gathered.insert(gathered.end(), block.begin(), block.end());
      }
      adasum_gathered(gathered, n, length, type);
      const std::vector<std::byte> want = reference(n, length, type);
      const std::vector<std::byte> got(gathered.begin(), gathered.begin() + want.size());
      EXPECT_TRUE(got == want) << dtype_name(type) << " on " << n << " ranks, length " << length;
    }
  }
  std::vector<int32_t> ints{1, 2};
  EXPECT_THROW(adasum_gathered(std::as_writable_bytes(std::span(ints)), 2, 1, DataType::int32),
               InvalidArgument);
  std::vector<float> short_buffer{1, 2, 3};
  EXPECT_THROW(
      adasum_gathered(std::as_writable_bytes(std::span(short_buffer)), 2, 2, DataType::float32),
      InvalidArgument);
}

TEST(AdasumCombine, FormulaOnKnownVectors) {
  // Parallel equal vectors: a' = a (averaged, not summed).
  std::vector<double> a{1, 2, 3}, b{1, 2, 3};
  adasum_combine(a.data(), b.data(), 3, DataType::float64);
  EXPECT_EQ(a, (std::vector<double>{1, 2, 3}));
  // Orthogonal vectors: summed.
  std::vector<double> c{1, 0}, d{0, 2};
  adasum_combine(c.data(), d.data(), 2, DataType::float64);
  EXPECT_EQ(c, (std::vector<double>{1, 2}));
  // a = (1, 0), b = (1, 1): a.b = 1, |a|^2 = 1, |b|^2 = 2 -> 0.5 a + 0.75 b.
  std::vector<double> e{1, 0}, f{1, 1};
  adasum_combine(e.data(), f.data(), 2, DataType::float64);
  EXPECT_DOUBLE_EQ(e[0], 1.25);
  EXPECT_DOUBLE_EQ(e[1], 0.75);
  // A zero vector keeps coefficient 1 for the other.
  std::vector<double> z{0, 0}, g{3, 4};
  adasum_combine(z.data(), g.data(), 2, DataType::float64);
  EXPECT_EQ(z, (std::vector<double>{3, 4}));
}

TEST(AdasumCombine, RefusesIntegers) {
  std::vector<int32_t> a{1}, b{2};
  EXPECT_THROW(adasum_combine(a.data(), b.data(), 1, DataType::int32), InvalidArgument);
  RankThreads group(2);
  const auto errors = group.run_collect([&](Communicator& comm) {
    std::vector<int32_t> data{1, 2};
    adasum(comm, std::as_writable_bytes(std::span(data)), 2, DataType::int32);
  });
  for (const auto& error : errors) ASSERT_TRUE(error);
  EXPECT_NE(testing::describe(errors[0]).find("int32"), std::string::npos);
}

}  // namespace
}  // namespace kolo::comm
