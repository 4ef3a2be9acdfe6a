// The few NCCL types kolo passes across the library boundary, declared from NCCL's public
// documentation (docs.nvidia.com/deeplearning/nccl, "API" > "Types") rather than from nccl.h:
// kolo is never compiled against NCCL or CUDA. Values and layouts are NCCL's ABI since 2.18,
// the oldest release kolo accepts (kMinimumNcclVersion): ncclCommSplit and the non-blocking
// ncclConfig_t fields below all exist there.
#pragma once

#include <climits>
#include <cstddef>

namespace kolo::gpu {

using ncclComm_t = struct ncclComm*;
using cudaStream_t = struct CUstream_st*;  // the CUDA runtime's stream handle
using cudaEvent_t = struct CUevent_st*;    // and its event handle

inline constexpr int kNcclUniqueIdBytes = 128;
struct ncclUniqueId {
  char internal[kNcclUniqueIdBytes];
};

enum ncclResult_t : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,  // a non-blocking communicator's call has not finished yet
};

enum ncclDataType_t : int {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
};

// Bytes of one element of an NCCL type.
constexpr size_t nccl_type_size(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

// ncclRedOp_t is an int-sized enum; values past ncclAvg are user operations
// (ncclRedOpCreatePreMulSum).
enum ncclRedOp_t : int { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };

enum ncclScalarResidence_t : int { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 };

// ncclConfig_t as of NCCL 2.18 (NCCL reads `size` and `version` to know which fields a caller
// filled, so a newer library accepts it). NCCL_CONFIG_INITIALIZER: every field "undefined"
// (INT_MIN / nullptr) except size, magic and version.
inline constexpr int kNcclConfigUndefinedInt = INT_MIN;
inline constexpr unsigned kNcclConfigMagic = 0xcafebeef;
struct ncclConfig_t {
  size_t size = sizeof(ncclConfig_t);
  unsigned int magic = kNcclConfigMagic;
  unsigned int version = 21800;  // NCCL_VERSION(2, 18, 0)
  int blocking = kNcclConfigUndefinedInt;
  int cgaClusterSize = kNcclConfigUndefinedInt;
  int minCTAs = kNcclConfigUndefinedInt;
  int maxCTAs = kNcclConfigUndefinedInt;
  const char* netName = nullptr;
  int splitShare = kNcclConfigUndefinedInt;
};

// NCCL_VERSION(X, Y, Z) for 2.9 and later: X * 10000 + Y * 100 + Z.
constexpr int nccl_version_code(int major, int minor, int patch) {
  return major * 10000 + minor * 100 + patch;
}
inline constexpr int kMinimumNcclVersion = nccl_version_code(2, 18, 0);

}  // namespace kolo::gpu
