// Reductions MPI lacks or gets wrong, as user-defined ops:
// - float16 and bfloat16: each is its own 2-byte datatype, and sum/min/max/product widen to
//   float, combine, and round back (to nearest even), as kolo's own kernels do pairwise.
// - 8- and 16-bit integer sums wrap around (as kolo's kernels and torch do). Open MPI 4.1.4's
//   vectorized op component (op/avx) saturates them instead (200 + 120 gives 255 for uint8), a
//   difference kolo's tests caught, so kolo does not use MPI_SUM for them.
#include <cstdint>
#include <cstring>

#include "backends/mpi/mpi_state.h"
#include "base/types.h"
#include "kernels/half_bits.h"

namespace kolo::backends::mpi_plugin {

namespace {

template <ReduceOp Op>
float combine(float a, float b) {
  if constexpr (Op == ReduceOp::sum) return a + b;
  if constexpr (Op == ReduceOp::min) return b < a ? b : a;
  if constexpr (Op == ReduceOp::max) return b > a ? b : a;
  return a * b;
}

template <ReduceOp Op>
void reduce_half(void* in, void* inout, int* len, MPI_Datatype* type) {
  const bool brain = *type == mpi_state().bfloat16;
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    if (brain) {
      b[i] = kernels::detail::float_to_bfloat16_bits(
          combine<Op>(kernels::detail::bfloat16_bits_to_float(a[i]),
                      kernels::detail::bfloat16_bits_to_float(b[i])));
    } else {
      b[i] = kernels::detail::float_to_half_bits(combine<Op>(
          kernels::detail::half_bits_to_float(a[i]), kernels::detail::half_bits_to_float(b[i])));
    }
  }
}

template <typename T>
void wrapping_sum(const void* in, void* inout, int count) {
  const auto* a = static_cast<const T*>(in);
  auto* b = static_cast<T*>(inout);
  for (int i = 0; i < count; ++i) b[i] = static_cast<T>(a[i] + b[i]);  // unsigned: wraps
}

void reduce_small_int_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  if (*type == MPI_INT16_T) {
    wrapping_sum<uint16_t>(in, inout, *len);
  } else {
    wrapping_sum<uint8_t>(in, inout, *len);  // MPI_UINT8_T, MPI_INT8_T: same bits
  }
}

}  // namespace

int create_user_operands(KoloMpiError* error) {
  MpiState& state = mpi_state();
  for (MPI_Datatype* type : {&state.float16, &state.bfloat16}) {
    if (int code = MPI_Type_contiguous(2, MPI_BYTE, type); code != MPI_SUCCESS) {
      return fail(error, "MPI_Type_contiguous for a 16-bit float type", code);
    }
    if (int code = MPI_Type_commit(type); code != MPI_SUCCESS) {
      return fail(error, "MPI_Type_commit for a 16-bit float type", code);
    }
  }
  MPI_User_function* functions[4] = {&reduce_half<ReduceOp::sum>, &reduce_half<ReduceOp::min>,
                                     &reduce_half<ReduceOp::max>, &reduce_half<ReduceOp::product>};
  for (int i = 0; i < 4; ++i) {
    if (int code = MPI_Op_create(functions[i], /*commute=*/1, &state.half_ops[i]);
        code != MPI_SUCCESS) {
      return fail(error, "MPI_Op_create for a 16-bit float reduction", code);
    }
  }
  if (int code = MPI_Op_create(&reduce_small_int_sum, /*commute=*/1, &state.small_int_sum);
      code != MPI_SUCCESS) {
    return fail(error, "MPI_Op_create for the wrapping 8/16-bit integer sum", code);
  }
  return 0;
}

}  // namespace kolo::backends::mpi_plugin
