// scale_buffer: prescale/postscale (Average is Sum then 1/size). Floating types are multiplied
// in double and rounded once to their own precision; integers are rounded to nearest (ties to
// even) and saturated, so a factor never produces an out-of-range conversion.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "base/errors.h"
#include "comm/half_bits.h"
#include "comm/reduce.h"

namespace kolo::comm {

namespace {

template <typename T>
void scale_floating(T* __restrict data, size_t count, double factor) {
  for (size_t i = 0; i < count; ++i) {
    data[i] = static_cast<T>(static_cast<double>(data[i]) * factor);
  }
}

template <typename Widen, typename Narrow>
void scale_narrow(uint16_t* __restrict data, size_t count, double factor, Widen widen,
                  Narrow narrow) {
  for (size_t i = 0; i < count; ++i) {
    data[i] = narrow(static_cast<float>(static_cast<double>(widen(data[i])) * factor));
  }
}

template <typename T>
T round_saturated(double value) {
  const double rounded = std::nearbyint(value);
  // double(max) may round up past max (int64: 2^63), so >= catches the exact boundary too.
  if (rounded >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  if (rounded <= static_cast<double>(std::numeric_limits<T>::min())) {
    return std::numeric_limits<T>::min();
  }
  return static_cast<T>(rounded);
}

template <typename T>
void scale_integer(T* data, size_t count, double factor) {
  for (size_t i = 0; i < count; ++i) {
    data[i] = round_saturated<T>(static_cast<double>(data[i]) * factor);
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

}  // namespace kolo::comm
