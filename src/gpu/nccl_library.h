// libnccl.so.2, found at run time. Where it is looked for, in order:
//   1. the NCCL the process already has (torch's CUDA wheels load nvidia-nccl-cu12/cu13's),
//   2. KOLO_NCCL_LIBRARY (a file), else KOLO_NCCL_HOME / HOROVOD_NCCL_HOME (a folder: its lib/),
//   3. the system's (the dynamic linker's search for libnccl.so.2).
// The first that loads is the one: an older NCCL than kMinimumNcclVersion, or one missing a
// function below, is reported (NcclStatus::reason), never replaced by another copy.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/env.h"
#include "gpu/library_loader.h"
#include "gpu/nccl_abi.h"

namespace kolo::gpu {

inline constexpr const char* kNcclSoname = "libnccl.so.2";

// The NCCL functions kolo calls, resolved from the loaded library.
struct NcclFunctions {
  ncclResult_t (*get_version)(int* version);
  const char* (*get_error_string)(ncclResult_t result);
  const char* (*get_last_error)(ncclComm_t comm);
  ncclResult_t (*get_unique_id)(ncclUniqueId* id);
  ncclResult_t (*comm_init_rank_config)(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                        ncclConfig_t* config);
  ncclResult_t (*comm_split)(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                             ncclConfig_t* config);
  ncclResult_t (*comm_finalize)(ncclComm_t comm);
  ncclResult_t (*comm_destroy)(ncclComm_t comm);
  ncclResult_t (*comm_abort)(ncclComm_t comm);
  ncclResult_t (*comm_get_async_error)(ncclComm_t comm, ncclResult_t* async_error);
  ncclResult_t (*all_reduce)(const void* send, void* recv, size_t count, ncclDataType_t type,
                             ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
  ncclResult_t (*broadcast)(const void* send, void* recv, size_t count, ncclDataType_t type,
                            int root, ncclComm_t comm, cudaStream_t stream);
  ncclResult_t (*all_gather)(const void* send, void* recv, size_t send_count, ncclDataType_t type,
                             ncclComm_t comm, cudaStream_t stream);
  ncclResult_t (*reduce)(const void* send, void* recv, size_t count, ncclDataType_t type,
                         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
  ncclResult_t (*reduce_scatter)(const void* send, void* recv, size_t recv_count,
                                 ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                 cudaStream_t stream);
  ncclResult_t (*send)(const void* send, size_t count, ncclDataType_t type, int peer,
                       ncclComm_t comm, cudaStream_t stream);
  ncclResult_t (*recv)(void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                       cudaStream_t stream);
  ncclResult_t (*group_start)();
  ncclResult_t (*group_end)();
  ncclResult_t (*red_op_create_pre_mul_sum)(ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                            ncclScalarResidence_t residence, ncclComm_t comm);
  ncclResult_t (*red_op_destroy)(ncclRedOp_t op, ncclComm_t comm);
};

struct NcclStatus {
  bool loaded = false;
  int version = 0;   // NCCL's code (2.21.5 is 22105); 0 when it could not be asked
  std::string path;  // the file that was loaded (or found wanting)
  std::string
      origin;  // where it came from: "already loaded by the process", "KOLO_NCCL_LIBRARY", ...
  std::string reason;                                // why NCCL is not usable; empty when loaded
  [[nodiscard]] std::string version_string() const;  // "2.21.5"
  // One line for kolorun --check-build and logs: "2.21.5 (/path, already loaded by the process)"
  // or the reason.
  [[nodiscard]] std::string describe() const;
};

struct NcclLibrary {
  NcclStatus status;
  NcclFunctions functions{};  // all set when status.loaded
};

// Where NCCL is looked for, in order (see the top of this file); `system_name` is what the dynamic
// linker is asked for last (tests point it at a fake library).
std::vector<LibraryCandidate> nccl_candidates(const EnvLookup& lookup,
                                              const std::string& system_name = kNcclSoname);

// One search and check, uncached (tests; the process uses nccl_library()).
NcclLibrary load_nccl(const std::vector<LibraryCandidate>& candidates);

// The process's NCCL, looked for on the first call and kept.
const NcclLibrary& nccl_library();

// "ncclAllReduce: <NCCL's error string> (<code>)" style text for a failed call.
std::string nccl_error_text(const NcclLibrary& library, ncclResult_t result);

}  // namespace kolo::gpu
