// Device memory that other processes on the same GPU can map (CUDA IPC), for ranks that share one
// GPU: each rank allocates its mailboxes here and hands the handles to its peers, which sum the
// mailboxes on the GPU itself (kolo/torch/shared_gpu.py) instead of copying every gradient to the
// host and back. Only the runtime's IPC calls (loaded like the rest, gpu/cuda_runtime.h); the sums
// are torch's kernels.
//
// Each call runs on `device` and then makes the calling thread's current device what it was (the
// caller is the user's thread, whose current device is torch's).
#pragma once

#include <cstdint>
#include <string>

#include "gpu/cuda_runtime.h"

namespace kolo::gpu {

// Why this runtime cannot share device memory between processes; empty when it can.
std::string cuda_ipc_unavailable(const CudaRuntime& runtime);

struct ExportedMemory {
  std::uintptr_t pointer = 0;
  std::string handle;  // cudaIpcMemHandle_t's 64 bytes
};

// cudaMalloc(bytes) on `device` and its IPC handle.
ExportedMemory export_device_memory(const CudaRuntime& runtime, int device, size_t bytes);

// A peer's exported memory mapped into this process (cudaIpcOpenMemHandle); throws
// InvalidArgument for a handle that is not 64 bytes.
std::uintptr_t import_device_memory(const CudaRuntime& runtime, int device,
                                    const std::string& handle);

// cudaIpcCloseMemHandle for imported memory, cudaFree for exported memory.
void close_imported_memory(const CudaRuntime& runtime, int device, std::uintptr_t pointer);
void free_exported_memory(const CudaRuntime& runtime, int device, std::uintptr_t pointer);

}  // namespace kolo::gpu
