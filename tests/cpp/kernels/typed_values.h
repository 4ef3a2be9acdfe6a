// Test helpers: element access for every DataType through double/uint64, deterministic inputs,
// and an independent reference for each reduction (plain scalar code, not the kernels under test).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/types.h"
#include "kernels/reduce.h"

namespace kolo::kernels::testing {

inline std::vector<DataType> all_dtypes() {
  std::vector<DataType> types;
  for (int t = 0; t < kNumDataTypes; ++t) types.push_back(static_cast<DataType>(t));
  return types;
}

inline std::vector<ReduceOp> all_ops() {
  return {ReduceOp::sum,     ReduceOp::min,         ReduceOp::max,
          ReduceOp::product, ReduceOp::bitwise_and, ReduceOp::bitwise_or};
}

inline bool op_defined(DataType type, ReduceOp op) {
  const bool bitwise = op == ReduceOp::bitwise_and || op == ReduceOp::bitwise_or;
  return !(bitwise && is_floating(type));
}

inline bool is_signed_integer(DataType type) {
  return type == DataType::int8 || type == DataType::int16 || type == DataType::int32 ||
         type == DataType::int64;
}

// splitmix64: cheap, deterministic, well-mixed test data.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Integer element as uint64: sign-extended for signed types, zero-extended otherwise.
inline uint64_t load_int(const std::byte* p, DataType type) {
  switch (type) {
    case DataType::int8: {
      int8_t v;
      std::memcpy(&v, p, 1);
      return static_cast<uint64_t>(v);
    }
    case DataType::int16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return static_cast<uint64_t>(v);
    }
    case DataType::int32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return static_cast<uint64_t>(v);
    }
    case DataType::int64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<uint64_t>(v);
    }
    default:
      break;
  }
  uint64_t v = 0;  // little-endian: the low bytes
  std::memcpy(&v, p, dtype_size(type));
  return v;
}

inline void store_int(std::byte* p, DataType type, uint64_t value) {
  std::memcpy(p, &value, dtype_size(type));  // truncates (little-endian)
}

inline double load_float(const std::byte* p, DataType type) {
  switch (type) {
    case DataType::float32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DataType::float64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DataType::float16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return half_to_float(v);
    }
    case DataType::bfloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bfloat16_to_float(v);
    }
    default:
      return 0;
  }
}

inline void store_float(std::byte* p, DataType type, double value) {
  switch (type) {
    case DataType::float32: {
      const auto v = static_cast<float>(value);
      std::memcpy(p, &v, 4);
      return;
    }
    case DataType::float64:
      std::memcpy(p, &value, 8);
      return;
    case DataType::float16: {
      const uint16_t v = float_to_half(static_cast<float>(value));
      std::memcpy(p, &v, 2);
      return;
    }
    case DataType::bfloat16: {
      const uint16_t v = float_to_bfloat16(static_cast<float>(value));
      std::memcpy(p, &v, 2);
      return;
    }
    default:
      return;
  }
}

// Inputs whose reductions are exact in every type, so any combination order gives the same bits:
// floats are small integers (products of +-1, +-2); integers are arbitrary bit patterns (sum and
// product wrap, which is associative); bools lean towards 1 for and-like ops so results vary.
inline std::vector<std::byte> make_input(DataType type, ReduceOp op, int rank, size_t count) {
  const size_t element = dtype_size(type);
  std::vector<std::byte> data(count * element);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t bits = mix(static_cast<uint64_t>(rank) * 1000003ull + i * 7919ull +
                              static_cast<uint64_t>(op) * 31ull);
    std::byte* p = data.data() + i * element;
    if (type == DataType::boolean) {
      const bool and_like =
          op == ReduceOp::product || op == ReduceOp::min || op == ReduceOp::bitwise_and;
      p[0] = std::byte{static_cast<uint8_t>(and_like ? (bits % 8 != 0) : (bits % 8 == 0))};
    } else if (is_floating(type)) {
      static constexpr double kFactors[4] = {-2, -1, 1, 2};
      const double value = op == ReduceOp::product
                               ? kFactors[bits % 4]
                               : static_cast<double>(static_cast<int>(bits % 21) - 10);
      store_float(p, type, value);
    } else {
      store_int(p, type, bits);
    }
  }
  return data;
}

// Reference fold of two elements (inout = inout op in), written independently of the kernels.
inline void reference_combine(std::byte* inout, const std::byte* in, DataType type, ReduceOp op) {
  if (type == DataType::boolean) {
    const bool a = inout[0] != std::byte{0};
    const bool b = in[0] != std::byte{0};
    const bool and_like =
        op == ReduceOp::product || op == ReduceOp::min || op == ReduceOp::bitwise_and;
    inout[0] = std::byte{static_cast<uint8_t>(and_like ? (a && b) : (a || b))};
    return;
  }
  if (is_floating(type)) {
    const double a = load_float(inout, type);
    const double b = load_float(in, type);
    double r = 0;
    switch (op) {
      case ReduceOp::sum:
        r = a + b;
        break;
      case ReduceOp::product:
        r = a * b;
        break;
      case ReduceOp::min:
        r = std::min(a, b);
        break;
      case ReduceOp::max:
        r = std::max(a, b);
        break;
      default:
        break;
    }
    store_float(inout, type, r);
    return;
  }
  const uint64_t a = load_int(inout, type);
  const uint64_t b = load_int(in, type);
  const bool is_signed = is_signed_integer(type);
  auto less = [&](uint64_t x, uint64_t y) {
    return is_signed ? static_cast<int64_t>(x) < static_cast<int64_t>(y) : x < y;
  };
  uint64_t r = 0;
  switch (op) {
    case ReduceOp::sum:
      r = a + b;
      break;
    case ReduceOp::product:
      r = a * b;
      break;
    case ReduceOp::min:
      r = less(b, a) ? b : a;
      break;
    case ReduceOp::max:
      r = less(a, b) ? b : a;
      break;
    case ReduceOp::bitwise_and:
      r = a & b;
      break;
    case ReduceOp::bitwise_or:
      r = a | b;
      break;
  }
  store_int(inout, type, r);
}

// op over inputs[0..n) elementwise, folded in rank order.
inline std::vector<std::byte> reference_reduce(const std::vector<std::vector<std::byte>>& inputs,
                                               DataType type, ReduceOp op) {
  std::vector<std::byte> result = inputs.at(0);
  const size_t element = dtype_size(type);
  for (size_t r = 1; r < inputs.size(); ++r) {
    for (size_t i = 0; i < result.size(); i += element) {
      reference_combine(result.data() + i, inputs[r].data() + i, type, op);
    }
  }
  return result;
}

// Every defined dtype x op with each rank's input and the expected result.
struct ReferenceCase {
  DataType type;
  ReduceOp op;
  std::vector<std::vector<std::byte>> inputs;  // per rank
  std::vector<std::byte> expected;
};

inline std::vector<ReferenceCase> every_reference_case(int size, size_t count) {
  std::vector<ReferenceCase> cases;
  for (DataType type : all_dtypes()) {
    for (ReduceOp op : all_ops()) {
      if (!op_defined(type, op)) continue;
      ReferenceCase c{type, op, {}, {}};
      for (int r = 0; r < size; ++r) c.inputs.push_back(make_input(type, op, r, count));
      c.expected = reference_reduce(c.inputs, type, op);
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

// "" when equal, else where and how the first element differs.
inline std::string first_difference(const std::vector<std::byte>& actual,
                                    const std::vector<std::byte>& expected, DataType type) {
  if (actual.size() != expected.size()) {
    return "size " + std::to_string(actual.size()) + " != " + std::to_string(expected.size());
  }
  const size_t element = dtype_size(type);
  for (size_t i = 0; i < actual.size(); i += element) {
    if (std::memcmp(actual.data() + i, expected.data() + i, element) != 0) {
      const auto show = [&](const std::vector<std::byte>& v) {
        return is_floating(type) ? std::to_string(load_float(v.data() + i, type))
                                 : std::to_string(load_int(v.data() + i, type));
      };
      return "element " + std::to_string(i / element) + ": got " + show(actual) + ", expected " +
             show(expected);
    }
  }
  return "";
}

}  // namespace kolo::kernels::testing
