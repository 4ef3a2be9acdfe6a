// float16 / bfloat16 conversions: exhaustive over every half, and against a brute-force nearest
// search for many floats (round to nearest even, subnormals, overflow, infinities, NaN).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/reduce.h"
#include "kernels/typed_values.h"

namespace kolo::kernels {
namespace {

// Value of a half, decoded from the IEEE definition.
double decode_half(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// Nearest half by search over the (monotonic) table of positive finite halves; ties to even.
uint16_t reference_float_to_half(float value) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(value));
  if (std::isnan(value)) return 0x7e00;  // compared by isnan only
  if (a >= 65520.0) return sign | 0x7c00;
  // Positive finite halves 0x0000..0x7bff increase with their bit pattern.
  uint16_t lo = 0, hi = 0x7bff;
  while (lo < hi) {  // first pattern whose value >= a
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    if (decode_half(mid) < a)
      lo = static_cast<uint16_t>(mid + 1);
    else
      hi = mid;
  }
  uint16_t best = lo;
  if (lo > 0) {
    const double above = decode_half(lo) - a;
    const double below = a - decode_half(static_cast<uint16_t>(lo - 1));
    if (below < above || (below == above && ((lo - 1) & 1) == 0))
      best = static_cast<uint16_t>(lo - 1);
  }
  return sign | best;
}

uint16_t reference_float_to_bfloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t down = static_cast<uint16_t>(bits >> 16);
  if ((bits & 0xffff) == 0) return down;
  const auto as_float = [](uint16_t b) {
    return static_cast<double>(std::bit_cast<float>(uint32_t{b} << 16));
  };
  const uint16_t up = static_cast<uint16_t>(down + 1);  // next magnitude (may become infinity)
  const double v = std::fabs(static_cast<double>(value));
  const double below = v - std::fabs(as_float(down));
  // Rounding past the largest finite value lands on infinity, which IEEE places at 2^128.
  const double up_value = (up & 0x7f80) == 0x7f80 ? std::ldexp(1.0, 128) : std::fabs(as_float(up));
  const double above = up_value - v;
  if (below < above) return down;
  if (above < below) return up;
  return (down & 1) ? up : down;
}

TEST(Half, EveryHalfDecodesExactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    const double expected = decode_half(static_cast<uint16_t>(h));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
    } else {
      EXPECT_EQ(static_cast<double>(f), expected) << std::hex << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;  // -0 stays -0
    }
  }
}

TEST(Half, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const uint16_t back = float_to_half(half_to_float(bits));
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) {
      EXPECT_EQ(back, bits | 0x0200) << std::hex << h;  // NaN: quietened, sign and payload kept
    } else {
      EXPECT_EQ(back, bits) << std::hex << h;
    }
  }
}

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3c00);             // tie, even below
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);         // tie, even above
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);  // just past the tie
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65519.996f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // tie between max and 2^16: even is infinity
  EXPECT_EQ(float_to_half(-1e10f), 0xfc00);
  EXPECT_EQ(float_to_half(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_half(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
}

TEST(Half, Subnormals) {
  EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);            // smallest subnormal
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);            // tie with 0: even
  EXPECT_EQ(float_to_half(0x1p-25f * 1.0001f), 0x0001);  // just past the tie
  EXPECT_EQ(float_to_half(3 * 0x1p-25f), 0x0002);        // 1.5 ulps: tie, even above
  EXPECT_EQ(float_to_half(-0x1p-24f), 0x8001);
  EXPECT_EQ(float_to_half(1023 * 0x1p-24f), 0x03ff);     // largest subnormal
  EXPECT_EQ(float_to_half(1023.5f * 0x1p-24f), 0x0400);  // tie rounds up into the normals
  EXPECT_EQ(float_to_half(0x1p-14f), 0x0400);            // smallest normal
  EXPECT_EQ(float_to_half(1e-30f), 0x0000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(Half, Nan) {
  const uint16_t h = float_to_half(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(h & 0x7c00, 0x7c00);
  EXPECT_NE(h & 0x03ff, 0);
  const uint16_t negative = float_to_half(-std::numeric_limits<float>::signaling_NaN());
  EXPECT_EQ(negative & 0xfe00, 0xfe00);  // sign kept, quiet bit set
}

TEST(Half, MatchesBruteForceOnManyFloats) {
  size_t checked = 0;
  for (uint64_t i = 0; i < 400000; ++i) {
    uint32_t bits = static_cast<uint32_t>(testing::mix(i));
    // Half the samples concentrated on the half range (exponents 100..145) where rounding matters.
    if (i % 2) bits = (bits & 0x807fffffu) | ((100u + (bits >> 23) % 46) << 23);
    const float value = std::bit_cast<float>(bits);
    if (std::isnan(value)) continue;
    ASSERT_EQ(float_to_half(value), reference_float_to_half(value)) << std::hexfloat << value;
    ++checked;
  }
  EXPECT_GT(checked, 390000u);
}

TEST(Bfloat16, ConversionsAndRounding) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bfloat16(1.0f + 0x1p-8f), 0x3f80);                     // tie, even below
  EXPECT_EQ(float_to_bfloat16(1.0f + 3 * 0x1p-8f), 0x3f82);                 // tie, even above
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to infinity
  EXPECT_EQ(float_to_bfloat16(-INFINITY), 0xff80);
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x00018000u)), 0x0002);    // subnormal tie up
  const uint16_t nan = float_to_bfloat16(std::bit_cast<float>(0x7f800001u));  // signalling NaN
  EXPECT_TRUE(std::isnan(bfloat16_to_float(nan)));
  EXPECT_EQ(nan & 0x0040, 0x0040);
  for (uint32_t b = 0; b < 0x10000; ++b) {  // every bfloat16 round-trips (NaN stays NaN)
    const float f = bfloat16_to_float(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bfloat16(f), b);
  }
  for (uint64_t i = 0; i < 400000; ++i) {
    const float value = std::bit_cast<float>(static_cast<uint32_t>(testing::mix(i + 99)));
    if (std::isnan(value)) continue;
    ASSERT_EQ(float_to_bfloat16(value), reference_float_to_bfloat16(value))
        << std::hexfloat << value;
  }
}

}  // namespace
}  // namespace kolo::kernels
