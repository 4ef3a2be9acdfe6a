// The background thread's one CUDA call on the asynchronous host path: waiting until the copy
// that fills a host buffer from the GPU has finished (its event, recorded by kolo.torch on kolo's
// stream), so only kolo's thread waits, never the caller's.
#pragma once

#include <cstdint>

#include "gpu/cuda_runtime.h"

namespace kolo::gpu {

// cudaSetDevice(device) (so this thread uses the event's context, not a new one on device 0),
// then cudaEventSynchronize(event). Throws kolo::Error naming the call, the device and the
// runtime's text; also when the process has no CUDA runtime (an event cannot exist then).
void wait_for_device_event(const CudaRuntime& runtime, std::uintptr_t event, int device);

// The same with the process's runtime (cuda_runtime()).
void wait_for_device_event(std::uintptr_t event, int device);

}  // namespace kolo::gpu
