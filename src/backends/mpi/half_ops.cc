// float16 and bfloat16 for MPI: each is its own 2-byte datatype, and sum/min/max/product are
// user-defined ops that widen to float, combine, and round back (to nearest even), as kolo's own
// reduction kernels do pairwise.
#include <cstdint>
#include <cstring>

#include "backends/mpi/mpi_state.h"
#include "comm/half_bits.h"
#include "comm/types.h"

namespace kolo::backends::mpi_plugin {

namespace {

template <comm::ReduceOp Op>
float combine(float a, float b) {
  if constexpr (Op == comm::ReduceOp::sum) return a + b;
  if constexpr (Op == comm::ReduceOp::min) return b < a ? b : a;
  if constexpr (Op == comm::ReduceOp::max) return b > a ? b : a;
  return a * b;
}

template <comm::ReduceOp Op>
void reduce_half(void* in, void* inout, int* len, MPI_Datatype* type) {
  const bool brain = *type == mpi_state().bfloat16;
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    if (brain) {
      b[i] = comm::detail::float_to_bfloat16_bits(combine<Op>(
          comm::detail::bfloat16_bits_to_float(a[i]), comm::detail::bfloat16_bits_to_float(b[i])));
    } else {
      b[i] = comm::detail::float_to_half_bits(combine<Op>(comm::detail::half_bits_to_float(a[i]),
                                                          comm::detail::half_bits_to_float(b[i])));
    }
  }
}

}  // namespace

int create_half_operands(KoloMpiError* error) {
  MpiState& state = mpi_state();
  for (MPI_Datatype* type : {&state.float16, &state.bfloat16}) {
    if (int code = MPI_Type_contiguous(2, MPI_BYTE, type); code != MPI_SUCCESS) {
      return fail(error, "MPI_Type_contiguous for a 16-bit float type", code);
    }
    if (int code = MPI_Type_commit(type); code != MPI_SUCCESS) {
      return fail(error, "MPI_Type_commit for a 16-bit float type", code);
    }
  }
  MPI_User_function* functions[4] = {&reduce_half<comm::ReduceOp::sum>,
                                     &reduce_half<comm::ReduceOp::min>,
                                     &reduce_half<comm::ReduceOp::max>,
                                     &reduce_half<comm::ReduceOp::product>};
  for (int i = 0; i < 4; ++i) {
    if (int code = MPI_Op_create(functions[i], /*commute=*/1, &state.half_ops[i]); code != MPI_SUCCESS) {
      return fail(error, "MPI_Op_create for a 16-bit float reduction", code);
    }
  }
  return 0;
}

}  // namespace kolo::backends::mpi_plugin
