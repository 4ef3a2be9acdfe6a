#include "base/types.h"

#include <fmt/format.h>

#include "base/errors.h"

namespace kolo {

size_t dtype_size(DataType type) {
  switch (type) {
    case DataType::uint8:
    case DataType::int8:
    case DataType::boolean:
      return 1;
    case DataType::int16:
    case DataType::float16:
    case DataType::bfloat16:
      return 2;
    case DataType::int32:
    case DataType::float32:
      return 4;
    case DataType::int64:
    case DataType::float64:
    case DataType::uint64:
      return 8;
  }
  throw InvalidArgument(fmt::format("unknown data type {}", static_cast<int>(type)));
}

std::string_view dtype_name(DataType type) {
  switch (type) {
    case DataType::uint8:
      return "uint8";
    case DataType::int8:
      return "int8";
    case DataType::int32:
      return "int32";
    case DataType::int64:
      return "int64";
    case DataType::float16:
      return "float16";
    case DataType::bfloat16:
      return "bfloat16";
    case DataType::float32:
      return "float32";
    case DataType::float64:
      return "float64";
    case DataType::boolean:
      return "bool";
    case DataType::int16:
      return "int16";
    case DataType::uint64:
      return "uint64";
  }
  return "unknown";
}

bool is_floating(DataType type) {
  return type == DataType::float16 || type == DataType::bfloat16 || type == DataType::float32 ||
         type == DataType::float64;
}

DataType dtype_from_wire(uint8_t value) {
  if (value >= kNumDataTypes) {
    throw InvalidArgument(
        fmt::format("unknown data type code {} (known codes are 0..{})", value, kNumDataTypes - 1));
  }
  return static_cast<DataType>(value);
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::min:
      return "min";
    case ReduceOp::max:
      return "max";
    case ReduceOp::product:
      return "product";
    case ReduceOp::bitwise_and:
      return "bitwise_and";
    case ReduceOp::bitwise_or:
      return "bitwise_or";
  }
  return "unknown";
}

}  // namespace kolo
