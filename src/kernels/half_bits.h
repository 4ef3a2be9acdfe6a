// Inline float16/bfloat16 <-> float32 conversions shared by the reduction and scaling kernels.
// Written without branches (selects only) so that loops calling them vectorize; the exported
// functions in reduce.h are thin wrappers around these. Rounding is to nearest, ties to even;
// subnormals, infinities and NaN (quietened, payload kept where it fits) are handled exactly.
#pragma once

#include <bit>
#include <cstdint>

namespace kolo::kernels::detail {

// `condition ? if_true : if_false` as mask arithmetic: gcc turns ternaries on these paths into
// branches, which stops vectorization.
inline uint32_t select_bits(bool condition, uint32_t if_true, uint32_t if_false) {
  const uint32_t mask = 0u - static_cast<uint32_t>(condition);
  return (if_true & mask) | (if_false & ~mask);
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  // Exponent and mantissa moved to float positions; the exponent still carries the half bias.
  const uint32_t shifted = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t exponent = shifted & 0x0f800000u;
  const uint32_t normal = shifted + (112u << 23);   // rebias 15 -> 127
  const uint32_t inf_nan = shifted + (224u << 23);  // exponent field becomes all ones
  // Subnormal half m * 2^-24: put m under the exponent of 2^-14 (1.m * 2^-14) and subtract
  // 2^-14. Both operands are normal floats, so flush-to-zero modes cannot disturb the result.
  const float biased = std::bit_cast<float>(shifted + (113u << 23));
  const uint32_t subnormal = std::bit_cast<uint32_t>(biased - std::bit_cast<float>(113u << 23));
  uint32_t bits = select_bits(exponent == 0x0f800000u, inf_nan, normal);
  bits = select_bits(exponent == 0, subnormal, bits);
  return std::bit_cast<float>(bits | sign);
}

inline uint16_t float_to_half_bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  // Normal half range: rebias 127 -> 15 and round away the low 13 mantissa bits to nearest
  // even; a carry out of the mantissa correctly bumps the exponent.
  const uint32_t normal = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
  // Below 2^-14: adding 0.5f makes the float's ulp 2^-24 (the half subnormal step), so the FPU's
  // own nearest-even rounding leaves the half subnormal in the low mantissa bits.
  const uint32_t subnormal =
      std::bit_cast<uint32_t>(std::bit_cast<float>(a) + 0.5f) - std::bit_cast<uint32_t>(0.5f);
  // NaN stays NaN (quiet bit set, top payload bits kept); infinity and anything that rounds to
  // 65536 or more (>= 65520) become infinity.
  const uint32_t inf_nan = select_bits(a > 0x7f800000u, 0x7e00u | ((a >> 13) & 0x3ffu), 0x7c00u);
  uint32_t bits = select_bits(a < 0x38800000u, subnormal, normal);
  bits = select_bits(a >= 0x477ff000u, inf_nan, bits);
  return static_cast<uint16_t>(bits | sign);
}

inline float bfloat16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  // Nearest even on the low 16 bits; overflow rounds into infinity as IEEE requires.
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (x >> 16) | 0x0040u;
  return static_cast<uint16_t>(select_bits((x & 0x7fffffffu) > 0x7f800000u, quiet_nan, rounded));
}

}  // namespace kolo::kernels::detail
