// Elementwise reduction kernels, chosen at run time by dtype x op as plain function pointers
// (as gloo does) rather than templates threaded through every algorithm. float16 and bfloat16
// are combined in float32 and rounded back to nearest-even once per combine, never truncated.
#pragma once

#include <cstddef>

#include "base/types.h"

namespace kolo::kernels {

// inout[i] = op(inout[i], in[i]) for i < count.
using ReduceFn = void (*)(void* inout, const void* in, size_t count);

// Throws InvalidArgument for combinations that make no sense (bitwise ops on floats).
ReduceFn reduce_function(DataType type, ReduceOp op);

// data[i] *= factor, computed in double (float types) or with rounding to nearest (integers).
void scale_buffer(void* data, size_t count, DataType type, double factor);

// Average's last step on a sum: data[i] * postscale (as scale_buffer), then divided by `divisor`
// (the number of ranks) correctly rounded in the type's own arithmetic (float16/bfloat16 in
// float32), integers by truncating division (average.cc says why not Horovod's * (1/n)).
void average_buffer(void* data, size_t count, DataType type, int divisor, double postscale);

// IEEE half and bfloat16 conversions with round-to-nearest-even.
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);

}  // namespace kolo::kernels
