// A stand-in libnccl.so.2 for the GPU layer's tests (no GPU, no NCCL): it exports NCCL's functions
// with NCCL's signatures. ncclGetVersion answers FAKE_NCCL_VERSION. A non-blocking communicator
// plays a script written in its unique id: internal[0] 'F' makes ncclCommInitRankConfig fail at
// once (ncclInvalidArgument); internal[1] is how many polls of ncclCommGetAsyncError answer
// ncclInProgress, internal[2] the ncclResult_t after them. A blocking config is refused
// (ncclInvalidUsage): kolo must ask for a non-blocking one. ncclCommAbort counts its calls
// (fake_nccl_aborts). Every other call fails with ncclInternalError, so a test that reached one
// by mistake would see it. FAKE_NCCL_WITHOUT_SPLIT leaves ncclCommSplit out (a library missing a
// function kolo needs).
#include "gpu/nccl_abi.h"

using namespace kolo::gpu;  // NOLINT: the fake's signatures read as NCCL's

#define FAIL_NCCL(signature)                                                 \
  extern "C" __attribute__((visibility("default"))) ncclResult_t signature { \
    return ncclInternalError;                                                \
  }

extern "C" __attribute__((visibility("default"))) ncclResult_t ncclGetVersion(int* version) {
  *version = FAKE_NCCL_VERSION;
  return ncclSuccess;
}
extern "C" __attribute__((visibility("default"))) const char* ncclGetErrorString(ncclResult_t) {
  return "fake NCCL error";
}
extern "C" __attribute__((visibility("default"))) const char* ncclGetLastError(ncclComm_t) {
  return "fake NCCL last error";
}

namespace {
int polls_in_progress = 0;
ncclResult_t result_after_polls = ncclSuccess;
int the_communicator = 0;  // its address is the fake ncclComm_t
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int fake_nccl_aborts = 0;
}

extern "C" __attribute__((visibility("default"))) ncclResult_t ncclCommInitRankConfig(
    ncclComm_t* comm, int, ncclUniqueId id, int, ncclConfig_t* config) {
  if (config == nullptr || config->blocking != 0) return ncclInvalidUsage;
  if (id.internal[0] == 'F') return ncclInvalidArgument;
  polls_in_progress = id.internal[1];
  result_after_polls = static_cast<ncclResult_t>(id.internal[2]);
  *comm = reinterpret_cast<ncclComm_t>(&the_communicator);
  return ncclInProgress;
}
extern "C" __attribute__((visibility("default"))) ncclResult_t ncclCommGetAsyncError(
    ncclComm_t, ncclResult_t* state) {
  if (polls_in_progress > 0) {
    --polls_in_progress;
    *state = ncclInProgress;
  } else {
    *state = result_after_polls;
  }
  return ncclSuccess;
}
extern "C" __attribute__((visibility("default"))) ncclResult_t ncclCommAbort(ncclComm_t) {
  ++fake_nccl_aborts;
  return ncclSuccess;
}
FAIL_NCCL(ncclGetUniqueId(ncclUniqueId*))
#ifndef FAKE_NCCL_WITHOUT_SPLIT
FAIL_NCCL(ncclCommSplit(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))
#endif
FAIL_NCCL(ncclCommFinalize(ncclComm_t))
FAIL_NCCL(ncclCommDestroy(ncclComm_t))
FAIL_NCCL(ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                        cudaStream_t))
FAIL_NCCL(ncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
FAIL_NCCL(ncclAllGather(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
FAIL_NCCL(ncclReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                     cudaStream_t))
FAIL_NCCL(ncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t))
FAIL_NCCL(ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
FAIL_NCCL(ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
FAIL_NCCL(ncclGroupStart())
FAIL_NCCL(ncclGroupEnd())
FAIL_NCCL(ncclRedOpCreatePreMulSum(ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t,
                                   ncclComm_t))
FAIL_NCCL(ncclRedOpDestroy(ncclRedOp_t, ncclComm_t))
