// Internal to comm/: the elementwise loops behind reduce_function(), one template per operator,
// instantiated per element type. Each loop takes __restrict pointers and has no branches in its
// body so that gcc vectorizes it at -O2/-O3.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/reduce.h"

namespace kolo::kernels::detail {

// Integer arithmetic done in an unsigned type wide enough to avoid promotion to int, so that
// overflow wraps (as every framework does) instead of being undefined behaviour.
template <typename T>
using WrapType = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

template <typename T>
struct SumOp {
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
    } else {
      return a + b;
    }
  }
};

template <typename T>
struct ProductOp {
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
    } else {
      return a * b;
    }
  }
};

// Floating min/max propagate NaN from either side (a NaN gradient must not vanish silently).
template <typename T>
struct MinOp {
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return (a < b || a != a) ? a : b;
    } else {
      return b < a ? b : a;
    }
  }
};

template <typename T>
struct MaxOp {
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return (a > b || a != a) ? a : b;
    } else {
      return b > a ? b : a;
    }
  }
};

template <typename T>
struct BitAndOp {
  static T apply(T a, T b) { return a & b; }
};

template <typename T>
struct BitOrOp {
  static T apply(T a, T b) { return a | b; }
};

// bool is stored as one byte; results are normalised to 0/1 whatever non-zero byte came in.
struct LogicalAndOp {
  static uint8_t apply(uint8_t a, uint8_t b) { return static_cast<uint8_t>((a != 0) & (b != 0)); }
};
struct LogicalOrOp {
  static uint8_t apply(uint8_t a, uint8_t b) { return static_cast<uint8_t>((a | b) != 0); }
};

template <typename T, typename Op>
void reduce_loop(T* __restrict inout, const T* __restrict in, size_t count) {
  for (size_t i = 0; i < count; ++i) inout[i] = Op::apply(inout[i], in[i]);
}

template <typename T, typename Op>
void reduce_kernel(void* inout, const void* in, size_t count) {
  reduce_loop<T, Op>(static_cast<T*>(inout), static_cast<const T*>(in), count);
}

// Defined in reduce_half.cc: float16/bfloat16 kernels (combine in float32, round once).
// Return nullptr for bitwise ops.
ReduceFn float16_reduce_function(ReduceOp op);
// Defined in reduce_half_f16c.cc: the F16C kernels, or nullptr where the CPU lacks them.
ReduceFn float16_f16c_reduce_function(ReduceOp op);
ReduceFn bfloat16_avx2_reduce_function(ReduceOp op);
ReduceFn bfloat16_reduce_function(ReduceOp op);

}  // namespace kolo::kernels::detail
