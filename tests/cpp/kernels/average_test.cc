// average_buffer: Average divides the sum by the number of ranks, correctly rounded in the type's
// arithmetic (what Horovod's tests expect of `sum / size`), integers by truncating division.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/errors.h"
#include "kernels/reduce.h"

namespace kolo::kernels {
namespace {

TEST(AverageBuffer, Float32DividesInsteadOfMultiplyingByARoundedReciprocal) {
  // Horovod's test_horovod_join_allreduce at 3 ranks with one joined: sum = 2t, expected 2t / 3.
  // float(2t) * float(1/3) is an ulp off for 65 of the 200 integers t in [-100, 100).
  int differs_from_reciprocal = 0;
  for (int t = -100; t < 100; ++t) {
    std::vector<float> sum = {static_cast<float>(2 * t)};
    average_buffer(sum.data(), 1, DataType::float32, 3, 1.0);
    EXPECT_EQ(sum[0], static_cast<float>(2 * t) / 3.0f) << t;
    if (sum[0] != static_cast<float>(2 * t) * static_cast<float>(1.0 / 3))
      ++differs_from_reciprocal;
  }
  EXPECT_EQ(differs_from_reciprocal, 65);
}

TEST(AverageBuffer, Float64AndHalfTypesDivideInTheirArithmetic) {
  for (int t = -100; t < 100; ++t) {
    std::vector<double> d = {2.0 * t};
    average_buffer(d.data(), 1, DataType::float64, 3, 1.0);
    EXPECT_EQ(d[0], 2.0 * t / 3.0) << t;
    std::vector<uint16_t> h = {float_to_half(static_cast<float>(2 * t))};
    average_buffer(h.data(), 1, DataType::float16, 3, 1.0);
    EXPECT_EQ(h[0], float_to_half(static_cast<float>(2 * t) / 3.0f)) << t;
    std::vector<uint16_t> b = {float_to_bfloat16(static_cast<float>(2 * t))};
    average_buffer(b.data(), 1, DataType::bfloat16, 3, 1.0);
    EXPECT_EQ(b[0], float_to_bfloat16(static_cast<float>(2 * t) / 3.0f)) << t;
  }
}

TEST(AverageBuffer, IntegersTruncateTowardZeroExactly) {
  std::vector<int32_t> i = {-10, -9, 10, 11, 49};
  average_buffer(i.data(), i.size(), DataType::int32, 3, 1.0);
  EXPECT_EQ(i, (std::vector<int32_t>{-3, -3, 3, 3, 16}));
  std::vector<int64_t> ones = {49};  // 49 ranks each contributing 1: the average is 1
  average_buffer(ones.data(), 1, DataType::int64, 49, 1.0);
  EXPECT_EQ(ones[0], 1);
  std::vector<uint8_t> u = {255, 2};
  average_buffer(u.data(), u.size(), DataType::uint8, 2, 1.0);
  EXPECT_EQ(u, (std::vector<uint8_t>{127, 1}));
}

TEST(AverageBuffer, PostscaleAppliesBeforeTheDivision) {
  std::vector<float> f = {6.0f};
  average_buffer(f.data(), 1, DataType::float32, 3, 0.5);
  EXPECT_EQ(f[0], 1.0f);
  std::vector<int32_t> i = {7};  // 7 * 0.5 / 2 = 1.75 -> 1, truncated once
  average_buffer(i.data(), 1, DataType::int32, 2, 0.5);
  EXPECT_EQ(i[0], 1);
}

// Values whose division by a power of two rounds in every way there is: subnormal results,
// the smallest normals, the largest finite values, signed zeros, infinities, NaN, and a spread
// of random bit patterns.
template <typename T, typename Bits>
std::vector<T> awkward_values() {
  std::vector<T> values = {T{0},
                           -T{0},
                           std::numeric_limits<T>::denorm_min(),
                           -std::numeric_limits<T>::denorm_min() * 3,
                           std::numeric_limits<T>::min(),
                           std::numeric_limits<T>::min() * T{1.5},
                           std::numeric_limits<T>::max(),
                           -std::numeric_limits<T>::max(),
                           std::numeric_limits<T>::infinity(),
                           -std::numeric_limits<T>::infinity(),
                           T{1} / T{3},
                           T{7}};
  std::mt19937_64 random(24);
  for (int i = 0; i < 20000; ++i) {
    const auto bits = static_cast<Bits>(random());
    T value;
    std::memcpy(&value, &bits, sizeof value);
    if (!std::isnan(value)) values.push_back(value);
  }
  return values;
}

template <typename T, typename Bits>
void expect_power_of_two_divisors_match_division(DataType type) {
  const std::vector<T> values = awkward_values<T, Bits>();
  for (int divisor : {2, 4, 8, 64, 1024}) {
    std::vector<T> averaged = values;
    average_buffer(averaged.data(), averaged.size(), type, divisor, 1.0);
    for (size_t i = 0; i < values.size(); ++i) {
      const T expected = values[i] / static_cast<T>(divisor);
      ASSERT_EQ(std::memcmp(&averaged[i], &expected, sizeof(T)), 0)
          << values[i] << " / " << divisor << ": got " << averaged[i] << ", want " << expected;
    }
  }
}

TEST(AverageBuffer, PowerOfTwoDivisorsGiveTheDivisionsBitsExactly) {
  // They take the multiplication by the exact reciprocal (average.cc).
  expect_power_of_two_divisors_match_division<float, uint32_t>(DataType::float32);
  expect_power_of_two_divisors_match_division<double, uint64_t>(DataType::float64);
  std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN()};
  average_buffer(nan.data(), 1, DataType::float32, 2, 1.0);
  EXPECT_TRUE(std::isnan(nan[0]));
  // float16 and bfloat16: every bit pattern, divided in float32 and rounded once.
  for (int divisor : {2, 8}) {
    for (uint32_t bits = 0; bits < 0x10000; ++bits) {
      const auto pattern = static_cast<uint16_t>(bits);
      std::vector<uint16_t> h = {pattern};
      average_buffer(h.data(), 1, DataType::float16, divisor, 1.0);
      if (!std::isnan(half_to_float(pattern))) {
        ASSERT_EQ(h[0], float_to_half(half_to_float(pattern) / static_cast<float>(divisor)))
            << bits << " / " << divisor;
      }
      if (std::isnan(bfloat16_to_float(pattern))) continue;
      std::vector<uint16_t> b = {pattern};
      average_buffer(b.data(), 1, DataType::bfloat16, divisor, 1.0);
      ASSERT_EQ(b[0], float_to_bfloat16(bfloat16_to_float(pattern) / static_cast<float>(divisor)))
          << bits << " / " << divisor;
    }
  }
}

TEST(AverageBuffer, OneRankAndEmptyBuffersAreUntouchedAndBadInputIsRefused) {
  std::vector<float> f = {1.5f};
  average_buffer(f.data(), 1, DataType::float32, 1, 1.0);
  EXPECT_EQ(f[0], 1.5f);
  average_buffer(nullptr, 0, DataType::float32, 3, 1.0);
  EXPECT_THROW(average_buffer(f.data(), 1, DataType::float32, 0, 1.0), InvalidArgument);
  std::vector<uint8_t> flags = {1};
  EXPECT_THROW(average_buffer(flags.data(), 1, DataType::boolean, 2, 1.0), InvalidArgument);
}

}  // namespace
}  // namespace kolo::kernels
