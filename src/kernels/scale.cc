// scale_buffer: prescale/postscale (Average divides: average.cc), with Horovod's CPU arithmetic so
// results match it bit for bit: float32, float16 and bfloat16 are multiplied in float (the factor
// rounded to float first), float64 in double; integers in double, then
// truncated toward zero as a C++ conversion does. Unlike Horovod, integers saturate (an
// out-of-range conversion is undefined behaviour there) and a product a few ulps short of a
// whole number counts as that number (Horovod's average of 49 ones on 49 ranks gives 0).
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "base/errors.h"
#include "kernels/half_bits.h"
#include "kernels/reduce.h"

namespace kolo::kernels {

namespace {

// In T's own precision, the factor rounded to T first (float32 in float, float64 in double).
template <typename T>
void scale_floating(T* __restrict data, size_t count, double factor) {
  const auto own = static_cast<T>(factor);
  for (size_t i = 0; i < count; ++i) data[i] *= own;
}

template <typename Widen, typename Narrow>
void scale_narrow(uint16_t* __restrict data, size_t count, double factor, Widen widen,
                  Narrow narrow) {
  const auto single = static_cast<float>(factor);
  for (size_t i = 0; i < count; ++i) data[i] = narrow(widen(data[i]) * single);
}

// A product within a few ulps of a whole number is that number: 49 * (1.0 / 49) is
// 0.9999999999999999 in double, and averaging 49 ones must still give 1.
double truncate_toward_zero(double value) {
  const double nearest = std::nearbyint(value);
  if (std::abs(value - nearest) <= 4 * std::numeric_limits<double>::epsilon() * std::abs(value)) {
    return nearest;
  }
  return std::trunc(value);
}

template <typename T>
T truncate_saturated(double value) {
  const double whole = truncate_toward_zero(value);
  // double(max) may round up past max (int64: 2^63), so >= catches the exact boundary too.
  if (whole >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  if (whole <= static_cast<double>(std::numeric_limits<T>::min())) {
    return std::numeric_limits<T>::min();
  }
  return static_cast<T>(whole);
}

template <typename T>
void scale_integer(T* data, size_t count, double factor) {
  for (size_t i = 0; i < count; ++i) {
    data[i] = truncate_saturated<T>(static_cast<double>(data[i]) * factor);
  }
}

}  // namespace

void scale_buffer(void* data, size_t count, DataType type, double factor) {
  if (factor == 1.0 || count == 0) return;
  if (!std::isfinite(factor)) {
    throw InvalidArgument(
        fmt::format("scale factor {} for {} data is not finite", factor, dtype_name(type)));
  }
  switch (type) {
    case DataType::float32:
      return scale_floating(static_cast<float*>(data), count, factor);
    case DataType::float64:
      return scale_floating(static_cast<double*>(data), count, factor);
    case DataType::float16:
      return scale_narrow(static_cast<uint16_t*>(data), count, factor, detail::half_bits_to_float,
                          detail::float_to_half_bits);
    case DataType::bfloat16:
      return scale_narrow(static_cast<uint16_t*>(data), count, factor,
                          detail::bfloat16_bits_to_float, detail::float_to_bfloat16_bits);
    case DataType::uint8:
      return scale_integer(static_cast<uint8_t*>(data), count, factor);
    case DataType::int8:
      return scale_integer(static_cast<int8_t*>(data), count, factor);
    case DataType::int16:
      return scale_integer(static_cast<int16_t*>(data), count, factor);
    case DataType::int32:
      return scale_integer(static_cast<int32_t*>(data), count, factor);
    case DataType::int64:
      return scale_integer(static_cast<int64_t*>(data), count, factor);
    case DataType::uint64:
      return scale_integer(static_cast<uint64_t*>(data), count, factor);
    case DataType::boolean:
      break;
  }
  throw InvalidArgument(fmt::format("cannot scale {} data by {} (only numeric types scale)",
                                    dtype_name(type), factor));
}

}  // namespace kolo::kernels
