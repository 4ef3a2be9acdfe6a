// _core.enqueue(options, input, output=None): one operation from Python into the runtime's queue.
// The scalar arguments travel as one EnqueueOptions object (bound as _core.EnqueueOptions, built
// with keyword arguments), the arrays beside it as DLPack views.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor_entry.h"

namespace kolo::python {

// Everything about one operation except its arrays; the defaults are a plain, ungrouped op on
// the global process set.
struct EnqueueOptions {
  int op = 0;                   // _core.OP_*
  std::string name;             // the tensor's name, the same on every rank
  int reduce_op = 0;            // _core.REDUCE_* (allreduce, reducescatter)
  int root = 0;                 // broadcast's root rank
  double prescale = 1.0;        // applied before the reduction
  double postscale = 1.0;       // applied after it
  int process_set = 0;          // the process set's id (0: every rank)
  std::vector<int64_t> splits;  // alltoall: rows sent to each rank (empty: even split)
  int group_id = 0;             // grouped operations: the group's id (0: not grouped)
  int group_size = 0;           // and how many members it has
  // Non-empty: what is wrong with the caller's arguments, raised here as a ValueError and failed
  // on the other ranks too (they would otherwise wait for this rank forever).
  std::string invalid;
  // A cudaEvent_t (as an integer) the input waits for, and its CUDA device (the asynchronous
  // host path: core::TensorEntry::ready_event). 0: none.
  uintptr_t ready_event = 0;
  int ready_device = -1;
  // A blocking call that waits right after submitting drives its own cycles (Session::drive).
  bool caller_drives = false;
};

// Queues the operation and returns its handle. `output` absent: in place (or, for allgather,
// alltoall and reducescatter, an output the runtime allocates).
core::HandleId enqueue(const EnqueueOptions& options, const nanobind::ndarray<>& input,
                       const std::optional<nanobind::ndarray<>>& output);

// The same for a contiguous, non-empty CPU array given as raw addresses (output == input: in
// place), its kolo DataType code (_core.DTYPE_*) and shape: what the torch layer passes, because
// importing a torch tensor through DLPack costs about 3 us per array, more than the rest of the
// enqueue. The caller has checked layout and device and keeps the memory alive until the handle
// completes. Allreduce and broadcast only (no splits, no runtime-allocated output). The scalars
// come positionally, not as an EnqueueOptions object: building that object with keywords was a
// measurable part of each async submission (100 per step in the per-op bench).
// device_index >= 0: CUDA device pointers for the NCCL path, with `caller_event` (a cudaEvent_t
// recorded on the caller's current stream) that kolo's stream waits for; required there.
// host_request_of >= 0 (with device_index < 0): host memory standing for a CUDA tensor of that
// device, nothing to wait for (the shared GPU path's handshake).
core::HandleId enqueue_pointers(int op, std::string name, int reduce_op, int root, double prescale,
                                double postscale, int process_set, int group_id, int group_size,
                                int dtype, std::vector<int64_t> shape, uintptr_t input,
                                uintptr_t output, bool caller_drives, int device_index = -1,
                                uintptr_t caller_event = 0, int host_request_of = -1);

// The request's scalar fields from `options` (checked); the caller adds type, shape and memory.
core::TensorEntry entry_from(const EnqueueOptions& options);

// entry_from() for the doors whose scalars come positionally from a caller that checked the
// tensor (enqueue_pointers, enqueue_device_output): nothing invalid, no ready event.
core::TensorEntry entry_from_checked(int op, std::string name, int reduce_op, int root,
                                     double prescale, double postscale, int process_set,
                                     int group_id, int group_size, std::vector<int64_t> splits,
                                     bool caller_drives);

// Binds EnqueueOptions and enqueue() into module `m`.
void bind_enqueue(nanobind::module_& m);

}  // namespace kolo::python
