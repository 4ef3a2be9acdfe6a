// _core.finish_on_stream: synchronize() of an operation on kolo's NCCL path. The host waits only
// for what Horovod's synchronize must wait for (negotiation and the collective being queued on
// kolo's stream); the GPU work is ordered for the caller by making the caller's stream wait for
// kolo's completion event (cudaStreamWaitEvent), so the caller's thread never waits for the GPU.
#pragma once

#include <nanobind/nanobind.h>

#include "core/tensor_entry.h"

namespace kolo::python {

// Waits for `handle` with the GIL released, running Python's signal handlers between slices
// (module.cc); throws the operation's error.
void wait_interruptibly(core::HandleId handle);

void bind_device_sync(nanobind::module_& m);

}  // namespace kolo::python
