#include "gpu/cuda_runtime.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/errors.h"

namespace kolo::gpu {

namespace {

std::vector<std::string> resolve_all(void* handle, CudaFunctions& f) {
  std::vector<std::string> missing;
  resolve_symbol(handle, "cudaGetErrorString", f.get_error_string, missing);
  resolve_symbol(handle, "cudaRuntimeGetVersion", f.runtime_get_version, missing);
  resolve_symbol(handle, "cudaGetDeviceCount", f.get_device_count, missing);
  resolve_symbol(handle, "cudaGetDevice", f.get_device, missing);
  resolve_symbol(handle, "cudaSetDevice", f.set_device, missing);
  resolve_symbol(handle, "cudaStreamCreateWithFlags", f.stream_create_with_flags, missing);
  resolve_symbol(handle, "cudaStreamDestroy", f.stream_destroy, missing);
  resolve_symbol(handle, "cudaStreamWaitEvent", f.stream_wait_event, missing);
  resolve_symbol(handle, "cudaEventCreateWithFlags", f.event_create_with_flags, missing);
  resolve_symbol(handle, "cudaEventDestroy", f.event_destroy, missing);
  resolve_symbol(handle, "cudaEventRecord", f.event_record, missing);
  resolve_symbol(handle, "cudaEventQuery", f.event_query, missing);
  resolve_symbol(handle, "cudaEventSynchronize", f.event_synchronize, missing);
  resolve_symbol(handle, "cudaMalloc", f.malloc, missing);
  resolve_symbol(handle, "cudaFree", f.free, missing);
  resolve_symbol(handle, "cudaMemcpyAsync", f.memcpy_async, missing);
  // Optional: only the shared-GPU path needs them (gpu/cuda_ipc.h says so when they are absent).
  std::vector<std::string> optional;
  resolve_symbol(handle, "cudaIpcGetMemHandle", f.ipc_get_mem_handle, optional);
  resolve_symbol(handle, "cudaIpcOpenMemHandle", f.ipc_open_mem_handle, optional);
  resolve_symbol(handle, "cudaIpcCloseMemHandle", f.ipc_close_mem_handle, optional);
  return missing;
}

}  // namespace

std::vector<std::string> cuda_runtime_sonames() {
  return {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
}

std::string CudaStatus::version_string() const {
  return version > 0 ? fmt::format("{}.{}", version / 1000, (version % 1000) / 10)
                     : std::string("unknown");
}

std::string CudaStatus::describe() const {
  if (loaded) return fmt::format("runtime {} ({}, {})", version_string(), path, origin);
  return reason;
}

std::vector<LibraryCandidate> cuda_runtime_candidates(
    const std::vector<std::string>& search_names) {
  using How = LibraryCandidate::How;
  std::vector<LibraryCandidate> candidates;
  for (const std::string& soname : cuda_runtime_sonames()) {
    candidates.push_back({How::already_loaded, soname, "already loaded by the process"});
  }
  for (const std::string& name : search_names) {
    candidates.push_back({How::search, name, "the system's dynamic linker search"});
  }
  return candidates;
}

CudaRuntime load_cuda_runtime(const std::vector<LibraryCandidate>& candidates) {
  CudaRuntime runtime;
  CudaStatus& status = runtime.status;
  const LibrarySearch search = open_first(candidates);
  if (!search.found) {
    status.reason = fmt::format("CUDA runtime not found: {}", search.reasons_text());
    return runtime;
  }
  status.path = search.library.path;
  status.origin = search.library.origin;
  const std::vector<std::string> missing = resolve_all(search.library.handle, runtime.functions);
  if (!missing.empty()) {
    status.reason = fmt::format("the CUDA runtime at {} ({}) lacks {}", status.path, status.origin,
                                fmt::join(missing, ", "));
    return runtime;
  }
  int version = 0;
  if (runtime.functions.runtime_get_version(&version) == kCudaSuccess) status.version = version;
  status.loaded = true;
  return runtime;
}

const CudaRuntime& cuda_runtime() {
  static const CudaRuntime runtime = load_cuda_runtime(cuda_runtime_candidates());
  return runtime;
}

void check_cuda(const CudaRuntime& runtime, cudaError_t error, const char* what) {
  if (error == kCudaSuccess) return;
  const char* text = runtime.functions.get_error_string != nullptr
                         ? runtime.functions.get_error_string(error)
                         : nullptr;
  throw Error(
      fmt::format("{}: {} (cudaError_t {})", what, text != nullptr ? text : "CUDA error", error));
}

}  // namespace kolo::gpu
