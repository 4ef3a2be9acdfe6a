#include "gpu/cuda_ipc.h"

#include <fmt/format.h>

#include <cstring>

#include "base/errors.h"

namespace kolo::gpu {

namespace {

// Runs `body` with `device` current, then restores the thread's previous device.
template <typename Body>
void on_device(const CudaRuntime& runtime, int device, const char* what, Body&& body) {
  if (const std::string why = cuda_ipc_unavailable(runtime); !why.empty()) {
    throw Error(fmt::format("{} on CUDA device {}: {}", what, device, why));
  }
  const CudaFunctions& f = runtime.functions;
  int previous = -1;
  if (f.get_device(&previous) != kCudaSuccess) previous = -1;
  check_cuda(runtime, f.set_device(device),
             fmt::format("cudaSetDevice({}) for {}", device, what).c_str());
  try {
    body(f);
  } catch (...) {
    if (previous >= 0) f.set_device(previous);
    throw;
  }
  if (previous >= 0 && previous != device) f.set_device(previous);
}

}  // namespace

std::string cuda_ipc_unavailable(const CudaRuntime& runtime) {
  if (!runtime.status.loaded) return runtime.status.reason;
  const CudaFunctions& f = runtime.functions;
  if (f.ipc_get_mem_handle == nullptr || f.ipc_open_mem_handle == nullptr ||
      f.ipc_close_mem_handle == nullptr) {
    return fmt::format(
        "the CUDA runtime at {} lacks cudaIpcGetMemHandle/OpenMemHandle/"
        "CloseMemHandle",
        runtime.status.path);
  }
  return {};
}

ExportedMemory export_device_memory(const CudaRuntime& runtime, int device, size_t bytes) {
  ExportedMemory exported;
  on_device(runtime, device, "exporting device memory", [&](const CudaFunctions& f) {
    void* pointer = nullptr;
    check_cuda(runtime, f.malloc(&pointer, bytes),
               fmt::format("cudaMalloc({} bytes) on CUDA device {}", bytes, device).c_str());
    CudaIpcMemHandle handle{};
    const cudaError_t error = f.ipc_get_mem_handle(&handle, pointer);
    if (error != kCudaSuccess) {
      f.free(pointer);
      check_cuda(runtime, error, "cudaIpcGetMemHandle");
    }
    exported.pointer = reinterpret_cast<std::uintptr_t>(pointer);
    exported.handle.assign(handle.reserved, sizeof(handle.reserved));
  });
  return exported;
}

std::uintptr_t import_device_memory(const CudaRuntime& runtime, int device,
                                    const std::string& handle) {
  if (handle.size() != kCudaIpcHandleBytes) {
    throw InvalidArgument(fmt::format("a CUDA IPC memory handle has {} bytes, not {}",
                                      kCudaIpcHandleBytes, handle.size()));
  }
  std::uintptr_t imported = 0;
  on_device(runtime, device, "mapping a peer's device memory", [&](const CudaFunctions& f) {
    CudaIpcMemHandle value{};
    std::memcpy(value.reserved, handle.data(), kCudaIpcHandleBytes);
    void* pointer = nullptr;
    check_cuda(runtime, f.ipc_open_mem_handle(&pointer, value, kCudaIpcMemLazyEnablePeerAccess),
               fmt::format("cudaIpcOpenMemHandle on CUDA device {}", device).c_str());
    imported = reinterpret_cast<std::uintptr_t>(pointer);
  });
  return imported;
}

void close_imported_memory(const CudaRuntime& runtime, int device, std::uintptr_t pointer) {
  on_device(runtime, device, "unmapping a peer's device memory", [&](const CudaFunctions& f) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the pointer travels through Python as an integer
    check_cuda(runtime, f.ipc_close_mem_handle(reinterpret_cast<void*>(pointer)),
               "cudaIpcCloseMemHandle");
  });
}

void free_exported_memory(const CudaRuntime& runtime, int device, std::uintptr_t pointer) {
  on_device(runtime, device, "freeing shared device memory", [&](const CudaFunctions& f) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the pointer travels through Python as an integer
    check_cuda(runtime, f.free(reinterpret_cast<void*>(pointer)), "cudaFree");
  });
}

}  // namespace kolo::gpu
