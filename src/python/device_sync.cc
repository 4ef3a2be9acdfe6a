#include "python/device_sync.h"

#include <fmt/format.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <string>

#include "base/errors.h"
#include "core/runtime.h"
#include "gpu/nccl_collectives.h"

namespace nb = nanobind;

namespace kolo::python {

namespace {

// The handle is forgotten whether the operation succeeded or failed, as _core.finish does. After
// the stream wait is queued the completion event may be destroyed (its owner goes with the
// released buffer): CUDA keeps an event that a stream still waits for until it completed.
void finish_on_stream(core::HandleId handle, uintptr_t stream, int device,
                      const std::string& name) {
  try {
    wait_interruptibly(handle);
  } catch (const kolo::Error&) {
    (void)core::runtime().release(handle);
    throw;
  }
  core::OwnedBuffer buffer = core::runtime().release(handle);
  if (buffer.device_done == 0) return;  // a host result (the op never reached the GPU)
  try {
    // NOLINTBEGIN(performance-no-int-to-ptr): both handles travel from Python as integers
    gpu::stream_waits_for(gpu::cuda_runtime(), reinterpret_cast<gpu::cudaStream_t>(stream),
                          reinterpret_cast<gpu::cudaEvent_t>(buffer.device_done), device);
    // NOLINTEND(performance-no-int-to-ptr)
  } catch (const kolo::Error& error) {
    throw kolo::Error(fmt::format("rank {}: synchronize of tensor '{}': {}",
                                  core::runtime().world().rank, name, error.what()));
  }
}

}  // namespace

void bind_device_sync(nb::module_& m) {
  m.def("finish_on_stream", &finish_on_stream, nb::arg("handle"), nb::arg("stream"),
        nb::arg("device"), nb::arg("name"),
        "Waits for an NCCL-path operation's handle (not for the GPU), then makes CUDA stream "
        "`stream` on `device` wait for kolo's completion event; forgets the handle.");
}

}  // namespace kolo::python
