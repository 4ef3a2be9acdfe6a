// average_buffer: the Average reduction's last step. The sum is divided by the number of ranks,
// correctly rounded in the tensor's own type, as torch DDP (and the expectation Horovod's test
// suite writes, `sum / size`) does. Horovod's CPU code multiplies by a rounded 1/size instead
// (float(1/3) for float32), which is up to an ulp off: its own test_horovod_join_allreduce fails
// at 3 ranks for 65 of the 200 integers in [-100, 100) that it averages.
#include <fmt/format.h>

#include <bit>
#include <cstdint>

#include "base/errors.h"
#include "kernels/half_bits.h"
#include "kernels/reduce.h"

namespace kolo::kernels {

namespace {

// A power of two's reciprocal is exact, so x * (1 / 2^k) is the same real number as x / 2^k and
// rounds to the same bits (subnormals, infinities and NaNs included). The multiplication is the
// common case (2, 4, 8 ranks) and costs a fraction of a division: divps retires about one float
// per cycle, and the division pass was 28% of the background thread's CPU training the CNN at
// np 2 (perf, session 24).
bool is_power_of_two(int n) { return n > 0 && std::has_single_bit(static_cast<unsigned>(n)); }

template <typename T>
void divide_floating(T* __restrict data, size_t count, int divisor) {
  if (is_power_of_two(divisor)) {
    const T reciprocal = T{1} / static_cast<T>(divisor);
    for (size_t i = 0; i < count; ++i) data[i] *= reciprocal;
    return;
  }
  const auto own = static_cast<T>(divisor);
  for (size_t i = 0; i < count; ++i) data[i] /= own;
}

// float16/bfloat16 divide in float32 and round once, as their sums are combined.
template <typename Widen, typename Narrow>
void divide_narrow(uint16_t* __restrict data, size_t count, int divisor, Widen widen,
                   Narrow narrow) {
  if (is_power_of_two(divisor)) {
    const float reciprocal = 1.0f / static_cast<float>(divisor);
    for (size_t i = 0; i < count; ++i) data[i] = narrow(widen(data[i]) * reciprocal);
    return;
  }
  const auto single = static_cast<float>(divisor);
  for (size_t i = 0; i < count; ++i) data[i] = narrow(widen(data[i]) / single);
}

// Integers: truncating division (toward zero, as Horovod's conversion of the scaled double and
// torch's div(rounding_mode='trunc')), exact for every value.
template <typename T>
void divide_integer(T* data, size_t count, int divisor) {
  const auto own = static_cast<T>(divisor);
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<T>(data[i] / own);
}

bool is_integer(DataType type) {
  switch (type) {
    case DataType::uint8:
    case DataType::int8:
    case DataType::int16:
    case DataType::int32:
    case DataType::int64:
    case DataType::uint64:
      return true;
    default:
      return false;
  }
}

}  // namespace

void average_buffer(void* data, size_t count, DataType type, int divisor, double postscale) {
  if (divisor < 1) {
    throw InvalidArgument(fmt::format("cannot average over {} ranks", divisor));
  }
  if (is_integer(type) && postscale != 1.0) {
    // One truncation of sum * postscale / n in double, as Horovod (not two).
    return scale_buffer(data, count, type, postscale / divisor);
  }
  scale_buffer(data, count, type, postscale);
  if (divisor == 1 || count == 0) return;
  switch (type) {
    case DataType::float32:
      return divide_floating(static_cast<float*>(data), count, divisor);
    case DataType::float64:
      return divide_floating(static_cast<double*>(data), count, divisor);
    case DataType::float16:
      return divide_narrow(static_cast<uint16_t*>(data), count, divisor, detail::half_bits_to_float,
                           detail::float_to_half_bits);
    case DataType::bfloat16:
      return divide_narrow(static_cast<uint16_t*>(data), count, divisor,
                           detail::bfloat16_bits_to_float, detail::float_to_bfloat16_bits);
    case DataType::uint8:
      return divide_integer(static_cast<uint8_t*>(data), count, divisor);
    case DataType::int8:
      return divide_integer(static_cast<int8_t*>(data), count, divisor);
    case DataType::int16:
      return divide_integer(static_cast<int16_t*>(data), count, divisor);
    case DataType::int32:
      return divide_integer(static_cast<int32_t*>(data), count, divisor);
    case DataType::int64:
      return divide_integer(static_cast<int64_t*>(data), count, divisor);
    case DataType::uint64:
      return divide_integer(static_cast<uint64_t*>(data), count, divisor);
    case DataType::boolean:
      break;
  }
  throw InvalidArgument(
      fmt::format("cannot average {} data (only numeric types average)", dtype_name(type)));
}

}  // namespace kolo::kernels
