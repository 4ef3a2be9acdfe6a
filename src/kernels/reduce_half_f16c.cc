// float16 and bfloat16 kernels for x86, chosen at run time when the CPU has F16C/AVX2. float16
// uses the F16C conversions (8 halves <-> 8 floats per instruction); the portable kernels in
// reduce_half.cc convert one element at a time in software and run about 10x slower. Same
// semantics: widen to float32, combine, round to nearest-even once (_MM_FROUND_TO_NEAREST_INT).
#include <bit>
#include <cstdint>

#include "kernels/half_bits.h"
#include "kernels/reduce.h"
#include "kernels/reduce_kernels.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace kolo::kernels::detail {

#if defined(__x86_64__)
namespace {

// CPUID leaf 1 rather than __builtin_cpu_supports("f16c"), which clang 14 (the fuzz build's
// compiler) does not know.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

template <typename Op>
__attribute__((target("avx2,f16c"))) void f16c_kernel(void* inout_bytes, const void* in_bytes,
                                                      size_t count) {
  auto* inout = static_cast<uint16_t*>(inout_bytes);
  const auto* in = static_cast<const uint16_t*>(in_bytes);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    alignas(32) float a[8];
    alignas(32) float b[8];
    _mm256_store_ps(a,
                    _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(inout + i))));
    _mm256_store_ps(b, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
    for (int k = 0; k < 8; ++k) a[k] = Op::apply(a[k], b[k]);  // vectorised by the compiler
    _mm_storeu_si128(reinterpret_cast<__m128i*>(inout + i),
                     _mm256_cvtps_ph(_mm256_load_ps(a), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < count; ++i) {
    inout[i] =
        float_to_half_bits(Op::apply(half_bits_to_float(inout[i]), half_bits_to_float(in[i])));
  }
}

// bfloat16 needs no special instruction (widening is a shift, narrowing integer arithmetic),
// only vector registers wide enough: the same branchless scalar code, compiled for AVX2.
template <typename Op>
__attribute__((target("avx2"))) void bf16_avx2_kernel(void* inout_bytes, const void* in_bytes,
                                                      size_t count) {
  auto* __restrict inout = static_cast<uint16_t*>(inout_bytes);
  const auto* __restrict in = static_cast<const uint16_t*>(in_bytes);
  for (size_t i = 0; i < count; ++i) {
    const float a = std::bit_cast<float>(static_cast<uint32_t>(inout[i]) << 16);
    const float b = std::bit_cast<float>(static_cast<uint32_t>(in[i]) << 16);
    const uint32_t x = std::bit_cast<uint32_t>(Op::apply(a, b));
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (x >> 16) | 0x0040u;
    inout[i] = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

}  // namespace

ReduceFn bfloat16_avx2_reduce_function(ReduceOp op) {
  if (!__builtin_cpu_supports("avx2")) return nullptr;
  switch (op) {
    case ReduceOp::sum:
      return &bf16_avx2_kernel<SumOp<float>>;
    case ReduceOp::product:
      return &bf16_avx2_kernel<ProductOp<float>>;
    case ReduceOp::min:
      return &bf16_avx2_kernel<MinOp<float>>;
    case ReduceOp::max:
      return &bf16_avx2_kernel<MaxOp<float>>;
    case ReduceOp::bitwise_and:
    case ReduceOp::bitwise_or:
      return nullptr;
  }
  return nullptr;
}

ReduceFn float16_f16c_reduce_function(ReduceOp op) {
  if (!cpu_has_f16c() || !__builtin_cpu_supports("avx2")) return nullptr;
  switch (op) {
    case ReduceOp::sum:
      return &f16c_kernel<SumOp<float>>;
    case ReduceOp::product:
      return &f16c_kernel<ProductOp<float>>;
    case ReduceOp::min:
      return &f16c_kernel<MinOp<float>>;
    case ReduceOp::max:
      return &f16c_kernel<MaxOp<float>>;
    case ReduceOp::bitwise_and:
    case ReduceOp::bitwise_or:
      return nullptr;
  }
  return nullptr;
}
#else
ReduceFn float16_f16c_reduce_function(ReduceOp) { return nullptr; }
ReduceFn bfloat16_avx2_reduce_function(ReduceOp) { return nullptr; }
#endif

}  // namespace kolo::kernels::detail
