// The plugin's communicator and collective entry points (signatures as in plugin_abi.h).
#pragma once

#include "backends/mpi/plugin_abi.h"

namespace kolo::backends::mpi_plugin {

int world(int* rank, int* size, KoloMpiError* error);
int comm_create(KoloMpiComm** comm, KoloMpiError* error);
int comm_free(KoloMpiComm* comm, KoloMpiError* error);
int broadcast(KoloMpiComm* comm, void* data, size_t bytes, int root, KoloMpiError* error);
int barrier(KoloMpiComm* comm, KoloMpiError* error);
int allreduce(KoloMpiComm* comm, void* data, size_t count, int dtype, int op, KoloMpiError* error);
int allgatherv(KoloMpiComm* comm, const void* mine, void* out, const size_t* bytes_per_rank,
               KoloMpiError* error);
int reducescatter(KoloMpiComm* comm, const void* data, const size_t* counts, int dtype, int op,
                  void* out, KoloMpiError* error);
int alltoallv(KoloMpiComm* comm, const void* in, const size_t* send_bytes, void* out,
              const size_t* recv_bytes, KoloMpiError* error);

}  // namespace kolo::backends::mpi_plugin
