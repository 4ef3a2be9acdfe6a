#include "python/enqueue.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "base/errors.h"
#include "core/runtime.h"
#include "python/dlpack_types.h"

namespace nb = nanobind;

namespace kolo::python {

namespace {

using negotiation::OpType;
using negotiation::UserReduceOp;

// Fills the part of a Request that describes an array, and checks it can be used in place.
void describe(const nb::ndarray<>& array, negotiation::Request& request, const char* role) {
  request.dtype = dtype_from_dlpack(array.dtype(), request.name);
  request.shape.assign(array.shape_ptr(), array.shape_ptr() + array.ndim());
  // An empty array has no layout to speak of; otherwise strides (in elements) must be row-major.
  const bool empty = array.size() == 0;
  int64_t expected = 1;
  for (size_t d = array.ndim(); !empty && d-- > 0;) {
    if (array.shape(d) != 1 && array.stride(d) != expected) {
      throw InvalidArgument("tensor '" + request.name + "': the " + role +
                            " must be contiguous (call .contiguous() / np.ascontiguousarray)");
    }
    expected *= static_cast<int64_t>(array.shape(d));
  }
  if (array.device_type() == nb::device::cpu::value) {
    request.device = negotiation::DeviceKind::cpu;
  } else if (array.device_type() == nb::device::cuda::value) {
    // kolo.torch never gets here with a CUDA tensor: it hands the core device pointers
    // (enqueue_pointers) or host copies. A CUDA array through the array API (CuPy, JAX) does.
    throw InvalidArgument("tensor '" + request.name +
                          "' is on a CUDA device: kolo's array API (kolo.allreduce and the rest) "
                          "takes host memory; pass CUDA tensors as torch tensors through "
                          "kolo.torch (horovod.torch), or copy the array to the host first");
  } else {
    throw InvalidArgument("tensor '" + request.name + "' is on an unsupported device type " +
                          std::to_string(array.device_type()));
  }
}

// Every field in order: the one place that lists them (the binding's keyword constructor and
// the doors whose caller checked its tensor).
EnqueueOptions options_of(int op, std::string name, int reduce_op, int root, double prescale,
                          double postscale, int process_set, std::vector<int64_t> splits,
                          int group_id, int group_size, std::string invalid, uintptr_t ready_event,
                          int ready_device, bool caller_drives) {
  return {.op = op,
          .name = std::move(name),
          .reduce_op = reduce_op,
          .root = root,
          .prescale = prescale,
          .postscale = postscale,
          .process_set = process_set,
          .splits = std::move(splits),
          .group_id = group_id,
          .group_size = group_size,
          .invalid = std::move(invalid),
          .ready_event = ready_event,
          .ready_device = ready_device,
          .caller_drives = caller_drives};
}

}  // namespace

// The request's scalar fields from `options`; throws for a group without members.
core::TensorEntry entry_from(const EnqueueOptions& options) {
  const std::string& name = options.name;
  core::TensorEntry entry;
  negotiation::Request& request = entry.request;
  request.name = name;
  request.op = static_cast<OpType>(options.op);
  request.reduce_op = static_cast<UserReduceOp>(options.reduce_op);
  request.root = options.root;
  request.prescale = options.prescale;
  request.postscale = options.postscale;
  request.process_set = options.process_set;
  request.invalid = options.invalid;
  if (options.group_id != 0 && options.group_size < 1) {
    throw InvalidArgument("tensor '" + name + "': a group needs at least one member");
  }
  request.group_id = options.group_id;
  request.group_size = options.group_size;
  entry.ready_event = options.ready_event;
  entry.ready_device = options.ready_device;
  entry.caller_drives = options.caller_drives;
  return entry;
}

core::HandleId enqueue(const EnqueueOptions& options, const nb::ndarray<>& input,
                       const std::optional<nb::ndarray<>>& output) {
  const std::string& name = options.name;
  core::TensorEntry entry = entry_from(options);
  negotiation::Request& request = entry.request;
  // A bad argument still reaches the runtime (marked invalid, without data): it raises the
  // ValueError here and fails the name on the other ranks, which would otherwise wait forever.
  try {
    for (int64_t rows : options.splits) {
      if (rows < 0) {
        throw InvalidArgument("tensor '" + name + "': alltoall splits must not be negative, got " +
                              std::to_string(rows));
      }
    }
    request.splits = options.splits;
    describe(input, request, "input");
    // A host copy of a CUDA tensor that the core must wait for: the asynchronous host path.
    if (options.ready_device >= 0) request.device = negotiation::DeviceKind::cuda_through_host;
    entry.input = input.data();
    entry.output = input.data();
    if (output) {
      negotiation::Request out = request;
      describe(*output, out, "output");
      if (out.dtype != request.dtype || out.shape != request.shape) {
        throw InvalidArgument("tensor '" + name +
                              "': output must have the input's dtype and shape");
      }
      entry.output = output->data();
    }
  } catch (const InvalidArgument& error) {
    if (request.invalid.empty()) request.invalid = error.what();
    request.splits.clear();
    entry.input = nullptr;
    entry.output = nullptr;
  }
  return core::runtime().enqueue(std::move(entry));
}

core::TensorEntry entry_from_checked(int op, std::string name, int reduce_op, int root,
                                     double prescale, double postscale, int process_set,
                                     int group_id, int group_size, std::vector<int64_t> splits,
                                     bool caller_drives) {
  // Nothing invalid, no ready event: the caller checked the tensor.
  return entry_from(options_of(op, std::move(name), reduce_op, root, prescale, postscale,
                               process_set, std::move(splits), group_id, group_size, {}, 0, -1,
                               caller_drives));
}

core::HandleId enqueue_pointers(int op, std::string name, int reduce_op, int root, double prescale,
                                double postscale, int process_set, int group_id, int group_size,
                                int dtype, std::vector<int64_t> shape, uintptr_t input,
                                uintptr_t output, bool caller_drives, int device_index,
                                uintptr_t caller_event, int host_request_of) {
  if (input == 0 || output == 0) {
    throw InvalidArgument("tensor '" + name +
                          "': enqueue_pointers takes no null pointers (use enqueue)");
  }
  core::TensorEntry entry =
      entry_from_checked(op, std::move(name), reduce_op, root, prescale, postscale, process_set,
                         group_id, group_size, {}, caller_drives);
  negotiation::Request& request = entry.request;
  request.dtype = dtype_from_wire(static_cast<uint8_t>(dtype));
  request.shape = std::move(shape);
  request.device = negotiation::DeviceKind::cpu;
  if (device_index >= 0) {
    // The NCCL path (kolo/torch/gpu_path.py chose it): device pointers on CUDA device
    // `device_index`, read on kolo's stream only after `caller_event` (recorded on the caller's
    // current stream at submission), so the submit never waits for the GPU.
    if (caller_event == 0) {
      throw InvalidArgument("tensor '" + request.name + "' on CUDA device " +
                            std::to_string(device_index) +
                            ": the NCCL path needs the event recorded on the caller's stream");
    }
    request.device = negotiation::DeviceKind::cuda;
    request.device_index = device_index;
    entry.caller_event = caller_event;
  } else if (host_request_of >= 0) {
    // Host memory standing for a CUDA tensor of that device, with nothing to wait for (the
    // shared GPU path's handshake, kolo/torch/shared_gpu.py): marked as enqueue() marks a
    // request with a ready device, so a rank that passes a CPU tensor under the same name fails
    // every rank with "Mismatched device".
    request.device = negotiation::DeviceKind::cuda_through_host;
    entry.ready_device = host_request_of;
  }
  // The addresses come from Python as integers (torch's data_ptr()); there is no pointer to keep.
  entry.input = reinterpret_cast<const void*>(input);  // NOLINT(performance-no-int-to-ptr)
  entry.output = reinterpret_cast<void*>(output);      // NOLINT(performance-no-int-to-ptr)
  return core::runtime().enqueue(std::move(entry));
}

void bind_enqueue(nb::module_& m) {
  nb::class_<EnqueueOptions>(m, "EnqueueOptions",
                             "One operation's arguments for enqueue(), built with keywords")
      .def(
          "__init__",
          [](EnqueueOptions* self, int op, std::string name, int reduce_op, int root,
             double prescale, double postscale, int process_set, std::vector<int64_t> splits,
             int group_id, int group_size, std::string invalid, uintptr_t ready_event,
             int ready_device, bool caller_drives) {
            new (self) EnqueueOptions(options_of(op, std::move(name), reduce_op, root, prescale,
                                                 postscale, process_set, std::move(splits),
                                                 group_id, group_size, std::move(invalid),
                                                 ready_event, ready_device, caller_drives));
          },
          nb::kw_only(), nb::arg("op"), nb::arg("name"), nb::arg("reduce_op") = 0,
          nb::arg("root") = 0, nb::arg("prescale") = 1.0, nb::arg("postscale") = 1.0,
          nb::arg("process_set") = 0, nb::arg("splits") = std::vector<int64_t>{},
          nb::arg("group_id") = 0, nb::arg("group_size") = 0, nb::arg("invalid") = "",
          nb::arg("ready_event") = 0, nb::arg("ready_device") = -1,
          nb::arg("caller_drives") = false)
      .def_rw("op", &EnqueueOptions::op)
      .def_rw("name", &EnqueueOptions::name)
      .def_rw("reduce_op", &EnqueueOptions::reduce_op)
      .def_rw("root", &EnqueueOptions::root)
      .def_rw("prescale", &EnqueueOptions::prescale)
      .def_rw("postscale", &EnqueueOptions::postscale)
      .def_rw("process_set", &EnqueueOptions::process_set)
      .def_rw("splits", &EnqueueOptions::splits)
      .def_rw("group_id", &EnqueueOptions::group_id)
      .def_rw("group_size", &EnqueueOptions::group_size)
      .def_rw("invalid", &EnqueueOptions::invalid)
      .def_rw("ready_event", &EnqueueOptions::ready_event)
      .def_rw("ready_device", &EnqueueOptions::ready_device)
      .def_rw("caller_drives", &EnqueueOptions::caller_drives);
  m.def("enqueue", &enqueue, nb::arg("options"), nb::arg("input"),
        nb::arg("output").none() = nb::none());
  m.def("enqueue_pointers", &enqueue_pointers, nb::arg("op"), nb::arg("name"), nb::arg("reduce_op"),
        nb::arg("root"), nb::arg("prescale"), nb::arg("postscale"), nb::arg("process_set"),
        nb::arg("group_id"), nb::arg("group_size"), nb::arg("dtype"), nb::arg("shape"),
        nb::arg("input"), nb::arg("output"), nb::arg("caller_drives") = false,
        nb::arg("device_index") = -1, nb::arg("caller_event") = 0, nb::arg("host_request_of") = -1);
}

}  // namespace kolo::python
