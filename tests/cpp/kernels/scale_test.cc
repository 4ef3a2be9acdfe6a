// scale_buffer: Horovod's CPU arithmetic (float for float32 and the 16-bit types, double for
// float64 and integers), integer truncation toward zero, and saturation.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "base/errors.h"
#include "kernels/reduce.h"

namespace kolo::kernels {
namespace {

TEST(ScaleBuffer, FloatsScaleInTheirOwnPrecisionAsHorovod) {
  // Horovod's test_horovod_allreduce_prescale expects float32 * float32(factor), which differs
  // from rounding the double product for some inputs (28.7279167 vs 28.7279186 here).
  const double factor = 0.1915194503788923;
  std::vector<float> f = {150.0f, 142.0f, -188.0f, 130.0f, 1.0f, 0.1f, 0.0f};
  const std::vector<float> original = f;
  scale_buffer(f.data(), f.size(), DataType::float32, factor);
  for (size_t i = 0; i < f.size(); ++i) {
    EXPECT_EQ(f[i], original[i] * static_cast<float>(factor)) << i;
  }
  std::vector<double> d = {2.0, -5.0, 1e300};
  scale_buffer(d.data(), d.size(), DataType::float64, 0.25);
  EXPECT_EQ(d, (std::vector<double>{0.5, -1.25, 0.25e300}));
}

TEST(ScaleBuffer, HalfTypes) {
  std::vector<uint16_t> h = {float_to_half(3.0f), float_to_half(-1.0f), float_to_half(60000.0f)};
  scale_buffer(h.data(), h.size(), DataType::float16, 0.5);
  EXPECT_EQ(half_to_float(h[0]), 1.5f);
  EXPECT_EQ(half_to_float(h[1]), -0.5f);
  EXPECT_EQ(half_to_float(h[2]), 30000.0f);
  std::vector<uint16_t> up = {float_to_half(60000.0f)};
  scale_buffer(up.data(), up.size(), DataType::float16, 2.0);
  EXPECT_EQ(up[0], 0x7c00);  // overflow -> infinity
  std::vector<uint16_t> b = {float_to_bfloat16(3.0f), float_to_bfloat16(1.0f)};
  scale_buffer(b.data(), b.size(), DataType::bfloat16, 0.25);
  EXPECT_EQ(bfloat16_to_float(b[0]), 0.75f);
  EXPECT_EQ(bfloat16_to_float(b[1]), 0.25f);
}

TEST(ScaleBuffer, IntegersTruncateTowardZeroAsHorovod) {
  std::vector<int32_t> v = {5, 7, -5, -7, 9, 1, 99};
  scale_buffer(v.data(), v.size(), DataType::int32, 0.5);  // 2.5 3.5 -2.5 -3.5 4.5 0.5 49.5
  EXPECT_EQ(v, (std::vector<int32_t>{2, 3, -2, -3, 4, 0, 49}));
  std::vector<int64_t> w = {10, -10, 29};
  scale_buffer(w.data(), w.size(), DataType::int64, 0.7);  // 7 -7 20.3
  EXPECT_EQ(w, (std::vector<int64_t>{7, -7, 20}));
}

TEST(ScaleBuffer, IntegerProductsAnUlpShortOfWholeStayWhole) {
  // 49 * (1.0 / 49) is 0.9999999999999999 in double: an average of 49 equal values is exact.
  for (int n : {3, 7, 49, 98, 1000}) {
    std::vector<int64_t> sums = {n, -n, 5LL * n};
    scale_buffer(sums.data(), sums.size(), DataType::int64, 1.0 / n);
    EXPECT_EQ(sums, (std::vector<int64_t>{1, -1, 5})) << n;
  }
}

TEST(ScaleBuffer, HalfTypesScaleInFloatLikeHorovod) {
  const double factor = 0.1915194503788923;  // a factor that is not exact in float
  for (float x : {-97.0f, -3.0f, 1.0f, 13.0f, 77.0f}) {
    std::vector<uint16_t> h = {float_to_half(x)};
    scale_buffer(h.data(), 1, DataType::float16, factor);
    EXPECT_EQ(h[0], float_to_half(x * static_cast<float>(factor))) << x;
    std::vector<uint16_t> b = {float_to_bfloat16(x)};
    scale_buffer(b.data(), 1, DataType::bfloat16, factor);
    EXPECT_EQ(b[0], float_to_bfloat16(x * static_cast<float>(factor))) << x;
  }
}

TEST(ScaleBuffer, IntegersSaturate) {
  std::vector<int8_t> a = {100, -100};
  scale_buffer(a.data(), a.size(), DataType::int8, 2.0);
  EXPECT_EQ(a, (std::vector<int8_t>{127, -128}));
  std::vector<uint8_t> b = {200, 3};
  scale_buffer(b.data(), b.size(), DataType::uint8, -2.0);
  EXPECT_EQ(b, (std::vector<uint8_t>{0, 0}));
  std::vector<int64_t> c = {std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::min()};
  scale_buffer(c.data(), c.size(), DataType::int64, 4.0);
  EXPECT_EQ(c[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(c[1], std::numeric_limits<int64_t>::min());
  std::vector<uint64_t> d = {std::numeric_limits<uint64_t>::max() / 2};
  scale_buffer(d.data(), d.size(), DataType::uint64, 3.0);
  EXPECT_EQ(d[0], std::numeric_limits<uint64_t>::max());
  std::vector<int16_t> e = {1000};
  scale_buffer(e.data(), e.size(), DataType::int16, 100.0);
  EXPECT_EQ(e[0], 32767);
}

TEST(ScaleBuffer, FactorOneIsANoOpForEveryType) {
  std::vector<uint8_t> flags = {1, 0, 1};
  scale_buffer(flags.data(), flags.size(), DataType::boolean, 1.0);
  EXPECT_EQ(flags, (std::vector<uint8_t>{1, 0, 1}));
}

TEST(ScaleBuffer, RefusesBoolAndNonFiniteFactors) {
  std::vector<uint8_t> flags = {1};
  EXPECT_THROW(scale_buffer(flags.data(), 1, DataType::boolean, 0.5), InvalidArgument);
  std::vector<float> f = {1.0f};
  EXPECT_THROW(
      scale_buffer(f.data(), 1, DataType::float32, std::numeric_limits<double>::infinity()),
      InvalidArgument);
  EXPECT_THROW(
      scale_buffer(f.data(), 1, DataType::float32, std::numeric_limits<double>::quiet_NaN()),
      InvalidArgument);
}

}  // namespace
}  // namespace kolo::kernels
