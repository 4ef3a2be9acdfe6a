// Element types and reductions that the collectives understand. comm/ knows types and byte
// counts, never tensor names or frameworks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kolo {

// Values are part of the wire protocol (negotiation messages): append only.
enum class DataType : uint8_t {
  uint8 = 0,
  int8 = 1,
  int32 = 2,
  int64 = 3,
  float16 = 4,
  bfloat16 = 5,
  float32 = 6,
  float64 = 7,
  boolean = 8,
  int16 = 9,
  uint64 = 10,  // used internally (bit vectors)
};
inline constexpr int kNumDataTypes = 11;

size_t dtype_size(DataType type);
std::string_view dtype_name(DataType type);
bool is_floating(DataType type);
// Throws InvalidArgument for a value outside the enum (e.g. from a corrupt message).
DataType dtype_from_wire(uint8_t value);

// Average is not here: it is Sum followed by average_buffer (reduce.h), done by the caller.
enum class ReduceOp : uint8_t {
  sum = 0,
  min = 1,
  max = 2,
  product = 3,
  bitwise_and = 4,
  bitwise_or = 5,
};
std::string_view reduce_op_name(ReduceOp op);

}  // namespace kolo
