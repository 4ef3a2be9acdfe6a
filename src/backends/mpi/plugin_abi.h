// The C ABI between libkolo and its MPI plugin (libkolo_mpi.so). libkolo never links MPI: it
// dlopens the plugin when MPI is chosen (KOLO_CPU_OPERATIONS=mpi) or when a rank started by mpirun
// must exchange the rendezvous address over MPI. Only C types cross the boundary, so the plugin
// and libkolo may come from different builds as long as the version below matches.
//
// Every function returns 0 on success; otherwise it writes a NUL-terminated message into `error`
// and returns KOLO_MPI_UNSUPPORTED when it refused before any communication because it lacks the
// element type or reduction (the same answer on every rank, so libkolo fails only that tensor),
// or another non-zero value for any other failure.
// Element types and reductions are the numeric values of kolo::DataType and ReduceOp (wire
// values, append-only). A `KoloMpiComm` is an opaque communicator of the plugin's; null means
// MPI_COMM_WORLD.
#pragma once

#include <stddef.h>  // NOLINT(modernize-deprecated-headers): shared with C
#include <stdint.h>  // NOLINT(modernize-deprecated-headers)

#ifdef __cplusplus
extern "C" {
#endif

#define KOLO_MPI_PLUGIN_ABI_VERSION 1
#define KOLO_MPI_PLUGIN_ENTRY "kolo_mpi_plugin_v1"
// Older plugins return 1 here too; libkolo then treats the failure as fatal, as it used to.
#define KOLO_MPI_UNSUPPORTED 2

typedef struct KoloMpiError {
  char text[512];
} KoloMpiError;

typedef struct KoloMpiComm KoloMpiComm;

typedef struct KoloMpiPluginV1 {
  uint32_t abi_version;  // KOLO_MPI_PLUGIN_ABI_VERSION
  // The MPI library's own description (MPI_Get_library_version); valid before initialize().
  const char* (*library_version)(void);
  // MPI_Init_thread(MPI_THREAD_MULTIPLE) unless MPI is already initialized (e.g. by mpi4py);
  // later calls only report. MPI_Finalize runs at process exit, never before, so kolo may
  // shut down and initialize again (libkolo skips it for a process exiting with a non-zero
  // status: backends/mpi_plugin.cc). `thread_level`: what MPI provided (MPI_THREAD_* value
  // order: 0 single, 1 funneled, 2 serialized, 3 multiple).
  int (*initialize)(int* thread_level, KoloMpiError* error);
  int (*world)(int* rank, int* size, KoloMpiError* error);
  // A duplicate of MPI_COMM_WORLD for one kolo session (collective over the world).
  int (*comm_create)(KoloMpiComm** comm, KoloMpiError* error);
  int (*comm_free)(KoloMpiComm* comm, KoloMpiError* error);

  int (*broadcast)(KoloMpiComm* comm, void* data, size_t bytes, int root, KoloMpiError* error);
  int (*barrier)(KoloMpiComm* comm, KoloMpiError* error);
  int (*allreduce)(KoloMpiComm* comm, void* data, size_t count, int dtype, int op,
                   KoloMpiError* error);
  // out = every rank's block in rank order; bytes_per_rank has one entry per rank.
  int (*allgatherv)(KoloMpiComm* comm, const void* mine, void* out, const size_t* bytes_per_rank,
                    KoloMpiError* error);
  // Rank r receives op over block r of `data` (counts[r] elements) into `out`.
  int (*reducescatter)(KoloMpiComm* comm, const void* data, const size_t* counts, int dtype, int op,
                       void* out, KoloMpiError* error);
  int (*alltoallv)(KoloMpiComm* comm, const void* in, const size_t* send_bytes, void* out,
                   const size_t* recv_bytes, KoloMpiError* error);
} KoloMpiPluginV1;

// The plugin's one exported symbol (KOLO_MPI_PLUGIN_ENTRY): its function table, or null when the
// plugin cannot serve `requested_abi_version`.
const KoloMpiPluginV1* kolo_mpi_plugin_v1(uint32_t requested_abi_version);

#ifdef __cplusplus
}
#endif
