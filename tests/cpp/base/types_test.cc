// DataType / ReduceOp helpers: sizes, names, wire decoding.
#include "base/types.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "base/errors.h"

namespace kolo {
namespace {

TEST(DataTypes, SizesAndNames) {
  EXPECT_EQ(dtype_size(DataType::uint8), 1u);
  EXPECT_EQ(dtype_size(DataType::int8), 1u);
  EXPECT_EQ(dtype_size(DataType::boolean), 1u);
  EXPECT_EQ(dtype_size(DataType::int16), 2u);
  EXPECT_EQ(dtype_size(DataType::float16), 2u);
  EXPECT_EQ(dtype_size(DataType::bfloat16), 2u);
  EXPECT_EQ(dtype_size(DataType::int32), 4u);
  EXPECT_EQ(dtype_size(DataType::float32), 4u);
  EXPECT_EQ(dtype_size(DataType::int64), 8u);
  EXPECT_EQ(dtype_size(DataType::float64), 8u);
  EXPECT_EQ(dtype_size(DataType::uint64), 8u);
  std::set<std::string> names;
  for (int t = 0; t < kNumDataTypes; ++t)
    names.insert(std::string(dtype_name(static_cast<DataType>(t))));
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumDataTypes));
  EXPECT_EQ(dtype_name(DataType::bfloat16), "bfloat16");
  EXPECT_EQ(dtype_name(DataType::boolean), "bool");
}

TEST(DataTypes, FloatingTypes) {
  int floating = 0;
  for (int t = 0; t < kNumDataTypes; ++t) floating += is_floating(static_cast<DataType>(t));
  EXPECT_EQ(floating, 4);
  EXPECT_TRUE(is_floating(DataType::bfloat16));
  EXPECT_FALSE(is_floating(DataType::int64));
}

TEST(DataTypes, WireDecoding) {
  for (int t = 0; t < kNumDataTypes; ++t) {
    EXPECT_EQ(dtype_from_wire(static_cast<uint8_t>(t)), static_cast<DataType>(t));
  }
  EXPECT_THROW(dtype_from_wire(kNumDataTypes), InvalidArgument);
  EXPECT_THROW(dtype_from_wire(255), InvalidArgument);
}

TEST(ReduceOps, Names) {
  EXPECT_EQ(reduce_op_name(ReduceOp::sum), "sum");
  EXPECT_EQ(reduce_op_name(ReduceOp::bitwise_or), "bitwise_or");
  std::set<std::string> names;
  for (int op = 0; op < 6; ++op)
    names.insert(std::string(reduce_op_name(static_cast<ReduceOp>(op))));
  EXPECT_EQ(names.size(), 6u);
}

}  // namespace
}  // namespace kolo
