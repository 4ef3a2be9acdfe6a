// Where HOROVOD_HIERARCHICAL_ALLREDUCE applies to a process set's CUDA allreduces, and the CPU
// side of it: the set's ranks on this host (the host's NCCL communicator gets its unique id
// from their local rank 0 over kolo's links) and the cross-host peers that allreduce each
// host's shard over kolo's transport.
#pragma once

#include <memory>
#include <optional>

#include "comm/communicator.h"
#include "core/executor.h"

namespace kolo::core {

// Null unless `setting` (HOROVOD_HIERARCHICAL_ALLREDUCE) is on and the set's ranks span several
// hosts with more than one on some host. Unset means off for CUDA tensors, as in Horovod: NCCL's
// own flat allreduce already runs its ring or tree over NVLink inside a host and the network
// across, where kolo's cross-host step goes through host memory. The subgroups borrow `set`'s
// links, so the result must not outlive them.
std::shared_ptr<const DeviceHierarchy> device_hierarchy(comm::Communicator& set,
                                                        std::optional<bool> setting);

}  // namespace kolo::core
