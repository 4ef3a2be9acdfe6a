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

// The backend of one process set (`comm`, its communicator) in a job of `world_size` ranks. MPI
// runs the global set (collective over MPI_COMM_WORLD; it loads the plugin and initializes MPI,
// throwing Error saying what is missing when it cannot); smaller sets run on kolo's transports,
// as MPI sub-communicators per set are not made yet.
std::unique_ptr<Backend> make_backend(CpuOperations choice, comm::Communicator& comm,
                                      const comm::AllreduceOptions& options, int world_size);

}  // namespace kolo::backends
