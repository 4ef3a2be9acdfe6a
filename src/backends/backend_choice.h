// Which backend runs a session's collectives: kolo's own transports (the default, Horovod's
// "gloo") or MPI (HOROVOD_CPU_OPERATIONS=mpi / KOLO_CPU_OPERATIONS=mpi / kolorun --mpi).
#pragma once

#include <memory>
#include <string_view>

#include "backends/backend.h"
#include "comm/collectives.h"

namespace kolo::backends {

enum class CpuOperations { kolo, mpi };

// "" (unset), "gloo" and "kolo" choose kolo's transports, "mpi" MPI (any case). Anything else
// (Horovod's "ccl", a typo) throws InvalidArgument naming `variable` and the value.
CpuOperations parse_cpu_operations(std::string_view text, std::string_view variable);
std::string_view cpu_operations_name(CpuOperations choice);

// The session's backend. The MPI one loads the plugin and initializes MPI (throws Error saying
// what is missing when it cannot).
std::unique_ptr<Backend> make_backend(CpuOperations choice, comm::Communicator& comm,
                                      const comm::AllreduceOptions& options, int rank, int size);

}  // namespace kolo::backends
