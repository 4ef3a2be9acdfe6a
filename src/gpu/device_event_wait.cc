#include "gpu/device_event_wait.h"

#include <fmt/format.h>

#include "base/errors.h"

namespace kolo::gpu {

void wait_for_device_event(const CudaRuntime& runtime, std::uintptr_t event, int device) {
  if (!runtime.status.loaded) {
    throw Error(
        fmt::format("waiting for CUDA device {}'s copy: {}", device, runtime.status.reason));
  }
  const std::string on_device = fmt::format("on CUDA device {}", device);
  check_cuda(runtime, runtime.functions.set_device(device), ("cudaSetDevice " + on_device).c_str());
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the event travels from Python as an integer
  check_cuda(runtime, runtime.functions.event_synchronize(reinterpret_cast<cudaEvent_t>(event)),
             ("cudaEventSynchronize (the copy into host memory) " + on_device).c_str());
}

void wait_for_device_event(std::uintptr_t event, int device) {
  wait_for_device_event(cuda_runtime(), event, device);
}

}  // namespace kolo::gpu
