// The CUDA runtime (libcudart), found at run time like NCCL (nccl_library.h): first the runtime
// the process already has (torch's CUDA wheels load nvidia-cuda-runtime's libcudart.so.12/13,
// and kolo must use that one so its streams and events live in torch's context), then the
// dynamic linker's search. kolo calls only the few functions below (events, stream waits, device
// memory), declared here from the CUDA Runtime API documentation: no CUDA header is used.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gpu/library_loader.h"
#include "gpu/nccl_abi.h"

namespace kolo::gpu {

using cudaError_t = int;  // cudaSuccess is 0
inline constexpr cudaError_t kCudaSuccess = 0;
inline constexpr cudaError_t kCudaErrorNotReady = 600;     // cudaErrorNotReady
inline constexpr unsigned kCudaStreamNonBlocking = 0x01;   // cudaStreamNonBlocking
inline constexpr unsigned kCudaEventDisableTiming = 0x02;  // cudaEventDisableTiming
inline constexpr int kCudaMemcpyDefault = 4;               // cudaMemcpyDefault (UVA)
inline constexpr unsigned kCudaIpcMemLazyEnablePeerAccess = 0x01;
inline constexpr size_t kCudaIpcHandleBytes = 64;  // CUDA_IPC_HANDLE_SIZE

// cudaIpcMemHandle_t: an opaque 64-byte value, passed by value.
struct CudaIpcMemHandle {
  char reserved[kCudaIpcHandleBytes];
};

// The runtime's sonames, newest first.
std::vector<std::string> cuda_runtime_sonames();

struct CudaFunctions {
  const char* (*get_error_string)(cudaError_t error);
  cudaError_t (*runtime_get_version)(int* version);
  cudaError_t (*get_device_count)(int* count);
  cudaError_t (*get_device)(int* device);
  cudaError_t (*set_device)(int device);
  cudaError_t (*stream_create_with_flags)(cudaStream_t* stream, unsigned flags);
  cudaError_t (*stream_destroy)(cudaStream_t stream);
  cudaError_t (*stream_wait_event)(cudaStream_t stream, cudaEvent_t event, unsigned flags);
  cudaError_t (*event_create_with_flags)(cudaEvent_t* event, unsigned flags);
  cudaError_t (*event_destroy)(cudaEvent_t event);
  cudaError_t (*event_record)(cudaEvent_t event, cudaStream_t stream);
  cudaError_t (*event_query)(cudaEvent_t event);
  cudaError_t (*event_synchronize)(cudaEvent_t event);
  cudaError_t (*malloc)(void** pointer, size_t bytes);
  cudaError_t (*free)(void* pointer);
  cudaError_t (*memcpy_async)(void* destination, const void* source, size_t bytes, int kind,
                              cudaStream_t stream);
  // Optional (gpu/cuda_ipc.h; null where a runtime lacks them): device memory that other
  // processes on the same GPU map, for ranks that share one GPU.
  cudaError_t (*ipc_get_mem_handle)(CudaIpcMemHandle* handle, void* pointer);
  cudaError_t (*ipc_open_mem_handle)(void** pointer, CudaIpcMemHandle handle, unsigned flags);
  cudaError_t (*ipc_close_mem_handle)(void* pointer);
};

struct CudaStatus {
  bool loaded = false;
  int version = 0;  // cudaRuntimeGetVersion: 12040 is 12.4
  std::string path;
  std::string origin;
  std::string reason;  // why the runtime is not usable; empty when loaded
  [[nodiscard]] std::string version_string() const;
  [[nodiscard]] std::string describe() const;
};

struct CudaRuntime {
  CudaStatus status;
  CudaFunctions functions{};
};

// Already-loaded sonames first, then the same names through the dynamic linker's search;
// `search_names` replaces the latter (tests point it at a fake runtime).
std::vector<LibraryCandidate> cuda_runtime_candidates(
    const std::vector<std::string>& search_names = cuda_runtime_sonames());

CudaRuntime load_cuda_runtime(const std::vector<LibraryCandidate>& candidates);

// The process's runtime, looked for on the first call and kept.
const CudaRuntime& cuda_runtime();

// Throws kolo::Error("<what>: <the runtime's error string> (cudaError_t <n>)") unless success.
void check_cuda(const CudaRuntime& runtime, cudaError_t error, const char* what);

}  // namespace kolo::gpu
