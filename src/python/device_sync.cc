#include "python/device_sync.h"

#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/errors.h"
#include "core/runtime.h"
#include "gpu/nccl_collectives.h"
#include "python/enqueue.h"

namespace nb = nanobind;

namespace kolo::python {

namespace {

// The handle is forgotten whether the operation succeeded or failed, as _core.finish does. After
// the stream wait is queued the completion event may be destroyed (its owner goes with the
// released buffer): CUDA keeps an event that a stream still waits for until it completed.
// Returns the rows received from each rank (alltoall; empty otherwise).
std::vector<int64_t> finish_on_stream(core::HandleId handle, uintptr_t stream, int device,
                                      const std::string& name) {
  try {
    wait_interruptibly(handle);
  } catch (const kolo::Error&) {
    (void)core::runtime().release(handle);
    throw;
  }
  core::OwnedBuffer buffer = core::runtime().release(handle);
  if (buffer.device_done == 0) return {};  // a host result (the op never reached the GPU)
  try {
    // NOLINTBEGIN(performance-no-int-to-ptr): both handles travel from Python as integers
    gpu::stream_waits_for(gpu::cuda_runtime(), reinterpret_cast<gpu::cudaStream_t>(stream),
                          reinterpret_cast<gpu::cudaEvent_t>(buffer.device_done), device);
    // NOLINTEND(performance-no-int-to-ptr)
  } catch (const kolo::Error& error) {
    throw kolo::Error(fmt::format("rank {}: synchronize of tensor '{}': {}",
                                  core::runtime().world().rank, name, error.what()));
  }
  return std::move(buffer.received_splits);
}

// The NCCL path's output allocator (allocator(shape) -> (device pointer, cudaEvent_t recorded on
// the allocating stream), integers), called by the
// executor on kolo's background thread. It takes the GIL there (PyGILState_Ensure through
// nanobind); a caller waiting for kolo never holds it (every blocking wait of _core releases
// it), so the two threads cannot wait for each other. `callable` is borrowed: the front end
// keeps it referenced with the handle until synchronize(), and the core calls it only before
// the handle completes. A Python exception becomes kolo::Error with its text, raised after the
// python_error was dropped under the GIL.
std::function<core::DeviceOutputMemory(const std::vector<int64_t>&)> device_allocator(
    PyObject* callable) {
  return [callable](const std::vector<int64_t>& shape) -> core::DeviceOutputMemory {
    std::string reason;
    {
      nb::gil_scoped_acquire gil;
      try {
        nb::tuple memory = nb::cast<nb::tuple>(nb::borrow(nb::handle(callable))(nb::cast(shape)));
        return {nb::cast<std::uintptr_t>(memory[0]), nb::cast<std::uintptr_t>(memory[1])};
      } catch (const nb::python_error& error) {
        // "OutOfMemoryError: CUDA out of memory ..." (what() would carry the whole traceback)
        reason = fmt::format("{}: {}", nb::cast<std::string>(error.type().attr("__name__")),
                             nb::cast<std::string>(nb::str(error.value())));
      } catch (const std::exception& error) {
        reason = error.what();
      }
    }
    throw kolo::Error(reason);
  };
}

// allgather, alltoall or reducescatter of a CUDA tensor on the NCCL path: `input` is a device
// pointer on `device_index`, read after `caller_event`; the output is asked of `allocator` once
// negotiation agreed on its shape. A separate door from enqueue_pointers, so that the CPU
// tensors' submit converts no extra arguments.
core::HandleId enqueue_device_output(int op, std::string name, int reduce_op, double prescale,
                                     double postscale, int process_set, int group_id,
                                     int group_size, int dtype, std::vector<int64_t> shape,
                                     uintptr_t input, std::vector<int64_t> splits, int device_index,
                                     uintptr_t caller_event, const nb::callable& allocator) {
  int64_t elements = 1;
  for (int64_t size : shape) elements *= size;
  // A rank with zero rows of an allgather or alltoall has no memory (torch's data_ptr() is 0).
  if ((input == 0 && elements != 0) || device_index < 0 || caller_event == 0) {
    throw InvalidArgument(fmt::format(
        "tensor '{}': enqueue_device_output needs a device pointer, a CUDA device and the "
        "caller's event (got {:#x}, device {}, event {:#x})",
        name, input, device_index, caller_event));
  }
  // The caller checked the tensor and the splits.
  core::TensorEntry entry =
      entry_from_checked(op, std::move(name), reduce_op, /*root=*/0, prescale, postscale,
                         process_set, group_id, group_size, std::move(splits), false);
  entry.request.dtype = dtype_from_wire(static_cast<uint8_t>(dtype));
  entry.request.shape = std::move(shape);
  entry.request.device = negotiation::DeviceKind::cuda;
  entry.request.device_index = device_index;
  entry.caller_event = caller_event;
  entry.input = reinterpret_cast<const void*>(input);  // NOLINT(performance-no-int-to-ptr)
  entry.device_allocator = device_allocator(allocator.ptr());
  return core::runtime().enqueue(std::move(entry));
}

}  // namespace

void bind_device_sync(nb::module_& m) {
  m.def("finish_on_stream", &finish_on_stream, nb::arg("handle"), nb::arg("stream"),
        nb::arg("device"), nb::arg("name"),
        "Waits for an NCCL-path operation's handle (not for the GPU), then makes CUDA stream "
        "`stream` on `device` wait for kolo's completion event; forgets the handle. Returns "
        "the rows received from each rank (alltoall; [] otherwise).");
  m.def("enqueue_device_output", &enqueue_device_output, nb::arg("op"), nb::arg("name"),
        nb::arg("reduce_op"), nb::arg("prescale"), nb::arg("postscale"), nb::arg("process_set"),
        nb::arg("group_id"), nb::arg("group_size"), nb::arg("dtype"), nb::arg("shape"),
        nb::arg("input"), nb::arg("splits"), nb::arg("device_index"), nb::arg("caller_event"),
        nb::arg("allocator"),
        "allgather/alltoall/reducescatter of a CUDA tensor in NCCL; allocator(shape) -> "
        "(device pointer, event on the allocating stream) is called on kolo's thread once the "
        "output's shape is agreed.");
}

}  // namespace kolo::python
