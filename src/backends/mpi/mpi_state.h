// The plugin's view of the MPI library: initialization (once per process, finalized at exit),
// error text, and the mapping from kolo's element types and reductions to MPI datatypes and ops
// (float16/bfloat16 through user-defined ops, which MPI has no predefined types for).
#pragma once

#include <mpi.h>

#include <optional>

#include "backends/mpi/plugin_abi.h"

namespace kolo::backends::mpi_plugin {

// Writes "what: MPI's error string" into `error`; returns 1 (the ABI's failure code).
int fail(KoloMpiError* error, const char* what, int mpi_code);
// Writes a plain message; returns 1.
int fail_text(KoloMpiError* error, const char* text);

// What the plugin keeps about the MPI library: set up once by initialize() and read-only after.
// MPI is process-wide state itself (initialized at most once per process), so this mirrors it.
struct MpiState {
  bool initialized = false;
  bool we_initialized = false;  // so MPI_Finalize at exit is ours to call (not mpi4py's)
  int thread_level = 0;
  MPI_Datatype float16 = MPI_DATATYPE_NULL;
  MPI_Datatype bfloat16 = MPI_DATATYPE_NULL;
  MPI_Op half_ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // sum min max prod
  MPI_Op small_int_sum = MPI_OP_NULL;  // wrapping sum of int8/uint8/int16 (user_ops.cc)
};
MpiState& mpi_state();

int initialize(int* thread_level, KoloMpiError* error);

struct MpiOperands {
  MPI_Datatype type;
  MPI_Op op;
};
// nullopt (and `error` filled) for a type the plugin does not know or an op the type lacks.
std::optional<MpiOperands> operands_for(int dtype, int op, KoloMpiError* error);
// MPI datatype of one element, for counts and sizes.
std::optional<MPI_Datatype> datatype_for(int dtype, KoloMpiError* error);

// Creates the float16/bfloat16 datatypes and the user-defined ops (user_ops.cc); called once
// from initialize().
int create_user_operands(KoloMpiError* error);

}  // namespace kolo::backends::mpi_plugin
