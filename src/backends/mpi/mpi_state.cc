#include "backends/mpi/mpi_state.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "base/types.h"

namespace kolo::backends::mpi_plugin {

MpiState& mpi_state() {
  static MpiState state;
  return state;
}

int fail(KoloMpiError* error, const char* what, int mpi_code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(mpi_code, text, &length) != MPI_SUCCESS) {
    std::snprintf(text, sizeof(text), "MPI error code %d", mpi_code);
  }
  std::snprintf(error->text, sizeof(error->text), "%s failed: %s", what, text);
  return 1;
}

int fail_text(KoloMpiError* error, const char* text) {
  std::snprintf(error->text, sizeof(error->text), "%s", text);
  return 1;
}

namespace {

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

int initialize_once(MpiState& state, KoloMpiError* error) {
  int already = 0;
  MPI_Initialized(&already);
  if (already) {
    // Someone else (mpi4py, the application) owns MPI; they finalize it too.
    if (int code = MPI_Query_thread(&state.thread_level); code != MPI_SUCCESS) {
      return fail(error, "MPI_Query_thread", code);
    }
  } else {
    if (int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &state.thread_level);
        code != MPI_SUCCESS) {
      return fail(error, "MPI_Init_thread", code);
    }
    state.we_initialized = true;
    // Not at kolo shutdown: MPI cannot be initialized twice, and kolo can.
    std::atexit(&finalize_at_exit);
  }
  // Errors come back as codes, so kolo can name the failed operation instead of MPI aborting.
  if (int code = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); code != MPI_SUCCESS) {
    return fail(error, "MPI_Comm_set_errhandler", code);
  }
  if (int failed = create_user_operands(error)) return failed;
  state.initialized = true;
  return 0;
}

}  // namespace

int initialize(int* thread_level, KoloMpiError* error) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  MpiState& state = mpi_state();
  if (!state.initialized) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return fail_text(error, "MPI has already been finalized in this process");
    if (int failed = initialize_once(state, error)) return failed;
  }
  // MPI_THREAD_* constants are ordered but their values are the library's; report 0..3.
  const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                        MPI_THREAD_MULTIPLE};
  *thread_level = 0;
  for (int i = 0; i < 4; ++i) {
    if (state.thread_level >= levels[i]) *thread_level = i;
  }
  return 0;
}

std::optional<MPI_Datatype> datatype_for(int dtype, KoloMpiError* error) {
  const MpiState& state = mpi_state();
  switch (static_cast<DataType>(dtype)) {
    case DataType::uint8:
      return MPI_UINT8_T;
    case DataType::int8:
      return MPI_INT8_T;
    case DataType::int16:
      return MPI_INT16_T;
    case DataType::int32:
      return MPI_INT32_T;
    case DataType::int64:
      return MPI_INT64_T;
    case DataType::uint64:
      return MPI_UINT64_T;
    case DataType::float16:
      return state.float16;
    case DataType::bfloat16:
      return state.bfloat16;
    case DataType::float32:
      return MPI_FLOAT;
    case DataType::float64:
      return MPI_DOUBLE;
    case DataType::boolean:
      return MPI_C_BOOL;
  }
  std::snprintf(error->text, sizeof(error->text), "the MPI plugin does not know element type %d",
                dtype);
  return std::nullopt;
}

std::optional<MpiOperands> operands_for(int dtype, int op, KoloMpiError* error) {
  auto type = datatype_for(dtype, error);
  if (!type) return std::nullopt;
  const auto kind = static_cast<DataType>(dtype);
  const auto reduce = static_cast<ReduceOp>(op);
  const bool bitwise = reduce == ReduceOp::bitwise_and || reduce == ReduceOp::bitwise_or;
  auto unsupported = [&]() -> std::optional<MpiOperands> {
    // libkolo names the type and the op (the plugin links no kolo code to name them).
    std::snprintf(error->text, sizeof(error->text), "no MPI reduction for this element type");
    return std::nullopt;
  };
  if (kind == DataType::boolean) {
    // As kolo's own kernels (and torch): sum and max are logical or, product and min logical and.
    const bool any =
        reduce == ReduceOp::sum || reduce == ReduceOp::max || reduce == ReduceOp::bitwise_or;
    return MpiOperands{*type, any ? MPI_LOR : MPI_LAND};
  }
  if (kind == DataType::float16 || kind == DataType::bfloat16) {
    if (bitwise || op < 0 || op > 3) return unsupported();
    return MpiOperands{*type, mpi_state().half_ops[op]};
  }
  switch (reduce) {
    case ReduceOp::sum: {
      const bool small =
          kind == DataType::uint8 || kind == DataType::int8 || kind == DataType::int16;
      return MpiOperands{*type, small ? mpi_state().small_int_sum : MPI_SUM};
    }
    case ReduceOp::min:
      return MpiOperands{*type, MPI_MIN};
    case ReduceOp::max:
      return MpiOperands{*type, MPI_MAX};
    case ReduceOp::product:
      return MpiOperands{*type, MPI_PROD};
    case ReduceOp::bitwise_and:
    case ReduceOp::bitwise_or:
      if (kind == DataType::float32 || kind == DataType::float64) return unsupported();
      return MpiOperands{*type, reduce == ReduceOp::bitwise_and ? MPI_BAND : MPI_BOR};
  }
  return unsupported();
}

}  // namespace kolo::backends::mpi_plugin
