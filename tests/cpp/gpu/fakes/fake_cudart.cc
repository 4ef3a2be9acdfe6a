// A stand-in libcudart for the loader's tests: the runtime functions kolo resolves, answering
// version 12.4 and "no device" (cudaErrorNoDevice, 100) to everything that would need one, except
// the two calls of gpu/device_event_wait.h: cudaSetDevice accepts device 0 only
// (cudaErrorInvalidDevice, 101, otherwise) and cudaEventSynchronize succeeds, writing down the
// event and the device set at that moment (fake_cudart_synchronized) so a test can check both.
// FAKE_CUDART_WITHOUT_STREAM_WAIT leaves cudaStreamWaitEvent and the optional IPC calls out.
#include <cstdint>

#include "gpu/cuda_runtime.h"

using namespace kolo::gpu;  // NOLINT: the fake's signatures read as the runtime's

namespace {
constexpr cudaError_t kNoDevice = 100;
constexpr cudaError_t kInvalidDevice = 101;
int current_device = -1;
}  // namespace

#define EXPORT extern "C" __attribute__((visibility("default")))
#define NO_DEVICE(signature) \
  EXPORT cudaError_t signature { return kNoDevice; }

// {event, device current when it was synchronized}; {0, -1} until then.
extern "C" {
__attribute__((visibility("default")))
std::uintptr_t fake_cudart_synchronized[2] = {0, static_cast<std::uintptr_t>(-1)};
}

EXPORT const char* cudaGetErrorString(cudaError_t error) {
  if (error == kInvalidDevice) return "invalid device ordinal (fake)";
  return error == kNoDevice ? "no CUDA-capable device is detected (fake)" : "fake CUDA error";
}
EXPORT cudaError_t cudaSetDevice(int device) {
  if (device != 0) return kInvalidDevice;
  current_device = device;
  return kCudaSuccess;
}
EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  fake_cudart_synchronized[0] = reinterpret_cast<std::uintptr_t>(event);
  fake_cudart_synchronized[1] = static_cast<std::uintptr_t>(current_device);
  return kCudaSuccess;
}
EXPORT cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = 12040;
  return kCudaSuccess;
}
EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  *count = 0;
  return kNoDevice;
}
NO_DEVICE(cudaGetDevice(int*))
NO_DEVICE(cudaStreamCreateWithFlags(cudaStream_t*, unsigned))
NO_DEVICE(cudaStreamDestroy(cudaStream_t))
#ifndef FAKE_CUDART_WITHOUT_STREAM_WAIT
NO_DEVICE(cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned))
#endif
NO_DEVICE(cudaEventCreateWithFlags(cudaEvent_t*, unsigned))
NO_DEVICE(cudaEventDestroy(cudaEvent_t))
NO_DEVICE(cudaEventRecord(cudaEvent_t, cudaStream_t))
NO_DEVICE(cudaEventQuery(cudaEvent_t))
NO_DEVICE(cudaMalloc(void**, size_t))
NO_DEVICE(cudaFree(void*))
NO_DEVICE(cudaMemcpyAsync(void*, const void*, size_t, int, cudaStream_t))
#ifndef FAKE_CUDART_WITHOUT_STREAM_WAIT
NO_DEVICE(cudaIpcGetMemHandle(CudaIpcMemHandle*, void*))
NO_DEVICE(cudaIpcOpenMemHandle(void**, CudaIpcMemHandle, unsigned))
NO_DEVICE(cudaIpcCloseMemHandle(void*))
#endif
