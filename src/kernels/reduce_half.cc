// float16 and bfloat16 reductions: both operands widened to float32, combined, and rounded back
// to nearest-even once per combine (never truncated), plus the exported scalar conversions.
#include "kernels/half_bits.h"
#include "kernels/reduce.h"
#include "kernels/reduce_kernels.h"

namespace kolo::kernels {

namespace detail {
namespace {

struct Float16Codec {
  static float widen(uint16_t bits) { return half_bits_to_float(bits); }
  static uint16_t narrow(float value) { return float_to_half_bits(value); }
};

struct Bfloat16Codec {
  static float widen(uint16_t bits) { return bfloat16_bits_to_float(bits); }
  static uint16_t narrow(float value) { return float_to_bfloat16_bits(value); }
};

template <typename Codec, typename Op>
void narrow_loop(uint16_t* __restrict inout, const uint16_t* __restrict in, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    inout[i] = Codec::narrow(Op::apply(Codec::widen(inout[i]), Codec::widen(in[i])));
  }
}

template <typename Codec, typename Op>
void narrow_kernel(void* inout, const void* in, size_t count) {
  narrow_loop<Codec, Op>(static_cast<uint16_t*>(inout), static_cast<const uint16_t*>(in), count);
}

template <typename Codec>
ReduceFn narrow_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return &narrow_kernel<Codec, SumOp<float>>;
    case ReduceOp::product:
      return &narrow_kernel<Codec, ProductOp<float>>;
    case ReduceOp::min:
      return &narrow_kernel<Codec, MinOp<float>>;
    case ReduceOp::max:
      return &narrow_kernel<Codec, MaxOp<float>>;
    case ReduceOp::bitwise_and:
    case ReduceOp::bitwise_or:
      return nullptr;
  }
  return nullptr;
}

}  // namespace

ReduceFn float16_reduce_function(ReduceOp op) {
  if (ReduceFn fast = float16_f16c_reduce_function(op)) return fast;
  return narrow_function<Float16Codec>(op);
}
ReduceFn bfloat16_reduce_function(ReduceOp op) {
  if (ReduceFn fast = bfloat16_avx2_reduce_function(op)) return fast;
  return narrow_function<Bfloat16Codec>(op);
}

}  // namespace detail

float half_to_float(uint16_t bits) { return detail::half_bits_to_float(bits); }
uint16_t float_to_half(float value) { return detail::float_to_half_bits(value); }
float bfloat16_to_float(uint16_t bits) { return detail::bfloat16_bits_to_float(bits); }
uint16_t float_to_bfloat16(float value) { return detail::float_to_bfloat16_bits(value); }

}  // namespace kolo::kernels
