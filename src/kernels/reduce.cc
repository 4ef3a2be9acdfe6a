#include "kernels/reduce.h"

#include <fmt/format.h>

#include "base/errors.h"
#include "kernels/reduce_kernels.h"

namespace kolo::kernels {

namespace {

using detail::reduce_kernel;

template <typename T>
ReduceFn arithmetic_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return &reduce_kernel<T, detail::SumOp<T>>;
    case ReduceOp::product:
      return &reduce_kernel<T, detail::ProductOp<T>>;
    case ReduceOp::min:
      return &reduce_kernel<T, detail::MinOp<T>>;
    case ReduceOp::max:
      return &reduce_kernel<T, detail::MaxOp<T>>;
    case ReduceOp::bitwise_and:
      if constexpr (std::is_integral_v<T>) return &reduce_kernel<T, detail::BitAndOp<T>>;
      return nullptr;
    case ReduceOp::bitwise_or:
      if constexpr (std::is_integral_v<T>) return &reduce_kernel<T, detail::BitOrOp<T>>;
      return nullptr;
  }
  return nullptr;
}

// bool follows torch: sum and max are logical or, product and min are logical and.
ReduceFn boolean_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::max:
    case ReduceOp::bitwise_or:
      return &reduce_kernel<uint8_t, detail::LogicalOrOp>;
    case ReduceOp::product:
    case ReduceOp::min:
    case ReduceOp::bitwise_and:
      return &reduce_kernel<uint8_t, detail::LogicalAndOp>;
  }
  return nullptr;
}

ReduceFn lookup(DataType type, ReduceOp op) {
  switch (type) {
    case DataType::uint8:
      return arithmetic_function<uint8_t>(op);
    case DataType::int8:
      return arithmetic_function<int8_t>(op);
    case DataType::int16:
      return arithmetic_function<int16_t>(op);
    case DataType::int32:
      return arithmetic_function<int32_t>(op);
    case DataType::int64:
      return arithmetic_function<int64_t>(op);
    case DataType::uint64:
      return arithmetic_function<uint64_t>(op);
    case DataType::float32:
      return arithmetic_function<float>(op);
    case DataType::float64:
      return arithmetic_function<double>(op);
    case DataType::float16:
      return detail::float16_reduce_function(op);
    case DataType::bfloat16:
      return detail::bfloat16_reduce_function(op);
    case DataType::boolean:
      return boolean_function(op);
  }
  return nullptr;
}

}  // namespace

ReduceFn reduce_function(DataType type, ReduceOp op) {
  ReduceFn fn = lookup(type, op);
  if (fn == nullptr) {
    const bool bitwise = op == ReduceOp::bitwise_and || op == ReduceOp::bitwise_or;
    throw InvalidArgument(fmt::format(
        "reduction {} is not defined for data type {}{}", reduce_op_name(op), dtype_name(type),
        bitwise ? " (bitwise reductions need an integer or bool type)" : ""));
  }
  return fn;
}

}  // namespace kolo::kernels
