// Reduction kernels: every dtype x op against the scalar reference, odd lengths (vector tails),
// the refused combinations, and the edge cases a vectorizer could get wrong.
#include "kernels/reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "base/errors.h"
#include "kernels/typed_values.h"

namespace kolo::kernels {
namespace {

TEST(ReduceFunction, EveryDefinedPairMatchesReference) {
  for (DataType type : testing::all_dtypes()) {
    for (ReduceOp op : testing::all_ops()) {
      if (!testing::op_defined(type, op)) continue;
      for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{17}, size_t{1003}}) {
        auto inout = testing::make_input(type, op, 0, count);
        const auto in = testing::make_input(type, op, 1, count);
        const auto expected = testing::reference_reduce({inout, in}, type, op);
        reduce_function(type, op)(inout.data(), in.data(), count);
        EXPECT_EQ(testing::first_difference(inout, expected, type), "")
            << dtype_name(type) << " " << reduce_op_name(op) << " count " << count;
      }
    }
  }
}

TEST(ReduceFunction, BitwiseOnFloatingTypesNamesTypeAndOp) {
  for (DataType type :
       {DataType::float16, DataType::bfloat16, DataType::float32, DataType::float64}) {
    for (ReduceOp op : {ReduceOp::bitwise_and, ReduceOp::bitwise_or}) {
      try {
        reduce_function(type, op);
        ADD_FAILURE() << "no error for " << dtype_name(type);
      } catch (const InvalidArgument& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(std::string(dtype_name(type))), std::string::npos) << message;
        EXPECT_NE(message.find(std::string(reduce_op_name(op))), std::string::npos) << message;
      }
    }
  }
}

TEST(ReduceFunction, UnknownTypeIsRefused) {
  EXPECT_THROW(reduce_function(static_cast<DataType>(200), ReduceOp::sum), InvalidArgument);
}

TEST(ReduceFunction, IntegersWrapInsteadOfOverflowing) {
  int8_t a[2] = {127, -128};
  const int8_t b[2] = {1, -1};
  reduce_function(DataType::int8, ReduceOp::sum)(a, b, 2);
  EXPECT_EQ(a[0], -128);
  EXPECT_EQ(a[1], 127);
  int16_t c = 300;
  const int16_t d = 300;
  reduce_function(DataType::int16, ReduceOp::product)(&c, &d, 1);
  EXPECT_EQ(c, static_cast<int16_t>(90000 % 65536));
  int64_t e = std::numeric_limits<int64_t>::max();
  const int64_t f = 1;
  reduce_function(DataType::int64, ReduceOp::sum)(&e, &f, 1);
  EXPECT_EQ(e, std::numeric_limits<int64_t>::min());
}

TEST(ReduceFunction, FloatMinMaxPropagateNanFromEitherSide) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
    float a[3] = {nan, 1.0f, 2.0f};
    const float b[3] = {1.0f, nan, 3.0f};
    reduce_function(DataType::float32, op)(a, b, 3);
    EXPECT_TRUE(std::isnan(a[0])) << reduce_op_name(op);
    EXPECT_TRUE(std::isnan(a[1])) << reduce_op_name(op);
    EXPECT_EQ(a[2], op == ReduceOp::min ? 2.0f : 3.0f);
    double c[2] = {std::numeric_limits<double>::quiet_NaN(), 4.0};
    const double d[2] = {0.0, std::numeric_limits<double>::quiet_NaN()};
    reduce_function(DataType::float64, op)(c, d, 2);
    EXPECT_TRUE(std::isnan(c[0]) && std::isnan(c[1])) << reduce_op_name(op);
    uint16_t h[2] = {0x7e00, float_to_half(1.0f)};  // NaN, 1
    const uint16_t g[2] = {float_to_half(1.0f), 0x7e00};
    reduce_function(DataType::float16, op)(h, g, 2);
    EXPECT_TRUE(std::isnan(half_to_float(h[0])) && std::isnan(half_to_float(h[1])));
  }
}

TEST(ReduceFunction, BoolResultsAreZeroOrOne) {
  uint8_t a[4] = {2, 0, 7, 0};
  const uint8_t b[4] = {3, 5, 0, 0};
  uint8_t sum[4];
  std::memcpy(sum, a, 4);
  reduce_function(DataType::boolean, ReduceOp::sum)(sum, b, 4);
  EXPECT_EQ(std::vector<uint8_t>(sum, sum + 4), (std::vector<uint8_t>{1, 1, 1, 0}));
  reduce_function(DataType::boolean, ReduceOp::product)(a, b, 4);
  EXPECT_EQ(std::vector<uint8_t>(a, a + 4), (std::vector<uint8_t>{1, 0, 0, 0}));
}

TEST(ReduceFunction, HalfSumRoundsToNearestEvenOncePerCombine) {
  // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties go to the even 1.
  uint16_t a[3] = {float_to_half(1.0f), float_to_half(1.0f + 0x1p-10f), float_to_half(2048.0f)};
  const uint16_t b[3] = {float_to_half(0x1p-11f), float_to_half(0x1p-11f), float_to_half(1.0f)};
  reduce_function(DataType::float16, ReduceOp::sum)(a, b, 3);
  EXPECT_EQ(half_to_float(a[0]), 1.0f);
  EXPECT_EQ(half_to_float(a[1]), 1.0f + 0x1p-9f);  // tie from an odd mantissa rounds up
  EXPECT_EQ(half_to_float(a[2]), 2048.0f);         // 2049 ties to even 2048
  uint16_t c = float_to_bfloat16(1.0f);
  const uint16_t d = float_to_bfloat16(0x1p-8f);  // half an ulp of bfloat16 at 1
  reduce_function(DataType::bfloat16, ReduceOp::sum)(&c, &d, 1);
  EXPECT_EQ(bfloat16_to_float(c), 1.0f);
}

TEST(ReduceFunction, HalfOverflowBecomesInfinity) {
  uint16_t a = float_to_half(65504.0f);
  const uint16_t b = float_to_half(65504.0f);
  reduce_function(DataType::float16, ReduceOp::sum)(&a, &b, 1);
  EXPECT_EQ(a, 0x7c00);
}

}  // namespace
}  // namespace kolo::kernels
