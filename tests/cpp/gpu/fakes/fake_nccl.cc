// A stand-in libnccl.so.2 for the loader's tests (no GPU, no NCCL): it exports NCCL's functions
// with NCCL's signatures. ncclGetVersion answers FAKE_NCCL_VERSION; every other call fails with
// ncclInternalError, so a test that reached one by mistake would see it. FAKE_NCCL_WITHOUT_SPLIT
// leaves ncclCommSplit out (a library missing a function kolo needs).
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
FAIL_NCCL(ncclGetUniqueId(ncclUniqueId*))
FAIL_NCCL(ncclCommInitRankConfig(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))
#ifndef FAKE_NCCL_WITHOUT_SPLIT
FAIL_NCCL(ncclCommSplit(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))
#endif
FAIL_NCCL(ncclCommFinalize(ncclComm_t))
FAIL_NCCL(ncclCommDestroy(ncclComm_t))
FAIL_NCCL(ncclCommAbort(ncclComm_t))
FAIL_NCCL(ncclCommGetAsyncError(ncclComm_t, ncclResult_t*))
FAIL_NCCL(ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                        cudaStream_t))
FAIL_NCCL(ncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
FAIL_NCCL(ncclAllGather(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
FAIL_NCCL(ncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t))
FAIL_NCCL(ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
FAIL_NCCL(ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
FAIL_NCCL(ncclGroupStart())
FAIL_NCCL(ncclGroupEnd())
FAIL_NCCL(ncclRedOpCreatePreMulSum(ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t,
                                   ncclComm_t))
FAIL_NCCL(ncclRedOpDestroy(ncclRedOp_t, ncclComm_t))
