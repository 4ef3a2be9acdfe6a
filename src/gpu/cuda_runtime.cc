#include "gpu/cuda_runtime.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/errors.h"

namespace kolo::gpu {

namespace {

template <typename Function>
void resolve(void* handle, const char* symbol, Function*& slot, std::vector<std::string>& missing) {
  slot = reinterpret_cast<Function*>(find_symbol(handle, symbol));
  if (slot == nullptr) missing.emplace_back(symbol);
}

std::vector<std::string> resolve_all(void* handle, CudaFunctions& f) {
  std::vector<std::string> missing;
  resolve(handle, "cudaGetErrorString", f.get_error_string, missing);
  resolve(handle, "cudaRuntimeGetVersion", f.runtime_get_version, missing);
  resolve(handle, "cudaGetDeviceCount", f.get_device_count, missing);
  resolve(handle, "cudaGetDevice", f.get_device, missing);
  resolve(handle, "cudaSetDevice", f.set_device, missing);
  resolve(handle, "cudaStreamCreateWithFlags", f.stream_create_with_flags, missing);
  resolve(handle, "cudaStreamDestroy", f.stream_destroy, missing);
  resolve(handle, "cudaStreamWaitEvent", f.stream_wait_event, missing);
  resolve(handle, "cudaEventCreateWithFlags", f.event_create_with_flags, missing);
  resolve(handle, "cudaEventDestroy", f.event_destroy, missing);
  resolve(handle, "cudaEventRecord", f.event_record, missing);
  resolve(handle, "cudaEventQuery", f.event_query, missing);
  resolve(handle, "cudaEventSynchronize", f.event_synchronize, missing);
  resolve(handle, "cudaMalloc", f.malloc, missing);
  resolve(handle, "cudaFree", f.free, missing);
  resolve(handle, "cudaMemcpyAsync", f.memcpy_async, missing);
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
    status.reason =
        fmt::format("CUDA runtime not found: {}",
                    search.reasons.empty() ? "no library was tried"
                                           : fmt::format("{}", fmt::join(search.reasons, "; ")));
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
