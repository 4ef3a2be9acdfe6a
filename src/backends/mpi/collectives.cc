// The collectives of the plugin's function table, each one MPI call on the session's communicator.
// MPI counts are ints: allreduce and broadcast go in chunks below 2^31 elements; the variable-size
// collectives need their displacements in an int too, and say so when a message is larger.
#include "backends/mpi/collectives.h"

#include <climits>
#include <cstdio>
#include <vector>

#include "backends/mpi/mpi_state.h"

struct KoloMpiComm {
  MPI_Comm comm;
};

namespace kolo::backends::mpi_plugin {

namespace {

MPI_Comm resolve(KoloMpiComm* comm) { return comm == nullptr ? MPI_COMM_WORLD : comm->comm; }

// MPI calls after MPI_Finalize abort the process in Open MPI. A C++ program that exits without
// kolo's shutdown() finalizes MPI (atexit) before kolo's runtime is destroyed; its last calls must
// fail politely instead.
bool after_finalize(KoloMpiError* error) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) fail_text(error, "MPI has already been finalized (the process is exiting)");
  return finalized != 0;
}

int comm_size(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  return size;
}

// Byte counts and displacements as MPI's ints; false (and `error`) when they do not fit.
bool to_int_layout(const size_t* bytes, int size, std::vector<int>& counts,
                   std::vector<int>& displacements, KoloMpiError* error) {
  counts.resize(size);
  displacements.resize(size);
  size_t offset = 0;
  for (int r = 0; r < size; ++r) {
    if (bytes[r] > INT_MAX || offset > INT_MAX) {
      std::snprintf(error->text, sizeof(error->text),
                    "the MPI backend moves at most 2 GiB per variable-size collective (MPI int "
                    "counts); block %d is %zu bytes at offset %zu",
                    r, bytes[r], offset);
      return false;
    }
    counts[r] = static_cast<int>(bytes[r]);
    displacements[r] = static_cast<int>(offset);
    offset += bytes[r];
  }
  return true;
}

}  // namespace

int comm_create(KoloMpiComm** comm, KoloMpiError* error) {
  if (after_finalize(error)) return 1;
  auto* created = new KoloMpiComm{MPI_COMM_NULL};
  if (int code = MPI_Comm_dup(MPI_COMM_WORLD, &created->comm); code != MPI_SUCCESS) {
    delete created;
    return fail(error, "MPI_Comm_dup", code);
  }
  *comm = created;
  return 0;
}

int comm_free(KoloMpiComm* comm, KoloMpiError* error) {
  if (comm == nullptr) return 0;
  if (after_finalize(error)) {
    delete comm;  // MPI_Finalize has released the communicator itself
    return 1;
  }
  const int code = MPI_Comm_free(&comm->comm);
  delete comm;
  return code == MPI_SUCCESS ? 0 : fail(error, "MPI_Comm_free", code);
}

int broadcast(KoloMpiComm* comm, void* data, size_t bytes, int root, KoloMpiError* error) {
  if (after_finalize(error)) return 1;
  auto* cursor = static_cast<char*>(data);
  do {
    const int chunk = static_cast<int>(bytes < INT_MAX ? bytes : INT_MAX);
    if (int code = MPI_Bcast(cursor, chunk, MPI_BYTE, root, resolve(comm)); code != MPI_SUCCESS) {
      return fail(error, "MPI_Bcast", code);
    }
    cursor += chunk;
    bytes -= static_cast<size_t>(chunk);
  } while (bytes > 0);
  return 0;
}

int barrier(KoloMpiComm* comm, KoloMpiError* error) {
  if (after_finalize(error)) return 1;
  const int code = MPI_Barrier(resolve(comm));
  return code == MPI_SUCCESS ? 0 : fail(error, "MPI_Barrier", code);
}

int allreduce(KoloMpiComm* comm, void* data, size_t count, int dtype, int op, KoloMpiError* error) {
  if (after_finalize(error)) return 1;
  auto operands = operands_for(dtype, op, error);
  if (!operands) return KOLO_MPI_UNSUPPORTED;
  int element_bytes = 0;
  MPI_Type_size(operands->type, &element_bytes);
  auto* cursor = static_cast<char*>(data);
  while (count > 0) {
    const int chunk = static_cast<int>(count < INT_MAX ? count : INT_MAX);
    if (int code =
            MPI_Allreduce(MPI_IN_PLACE, cursor, chunk, operands->type, operands->op, resolve(comm));
        code != MPI_SUCCESS) {
      return fail(error, "MPI_Allreduce", code);
    }
    cursor += static_cast<size_t>(chunk) * static_cast<size_t>(element_bytes);
    count -= static_cast<size_t>(chunk);
  }
  return 0;
}

int allgatherv(KoloMpiComm* comm, const void* mine, void* out, const size_t* bytes_per_rank,
               KoloMpiError* error) {
  if (after_finalize(error)) return 1;
  MPI_Comm mpi_comm = resolve(comm);
  int rank = 0;
  MPI_Comm_rank(mpi_comm, &rank);
  std::vector<int> counts;
  std::vector<int> displacements;
  if (!to_int_layout(bytes_per_rank, comm_size(mpi_comm), counts, displacements, error)) return 1;
  const int code = MPI_Allgatherv(mine, counts[rank], MPI_BYTE, out, counts.data(),
                                  displacements.data(), MPI_BYTE, mpi_comm);
  return code == MPI_SUCCESS ? 0 : fail(error, "MPI_Allgatherv", code);
}

int reducescatter(KoloMpiComm* comm, const void* data, const size_t* counts, int dtype, int op,
                  void* out, KoloMpiError* error) {
  if (after_finalize(error)) return 1;
  auto operands = operands_for(dtype, op, error);
  if (!operands) return KOLO_MPI_UNSUPPORTED;
  MPI_Comm mpi_comm = resolve(comm);
  const int size = comm_size(mpi_comm);
  std::vector<int> receive_counts(size);
  size_t total = 0;
  for (int r = 0; r < size; ++r) {
    total += counts[r];
    if (counts[r] > INT_MAX || total > INT_MAX) {
      return fail_text(error,
                       "the MPI backend reduce-scatters at most 2^31-1 elements (MPI int "
                       "counts)");
    }
    receive_counts[r] = static_cast<int>(counts[r]);
  }
  const int code =
      MPI_Reduce_scatter(data, out, receive_counts.data(), operands->type, operands->op, mpi_comm);
  return code == MPI_SUCCESS ? 0 : fail(error, "MPI_Reduce_scatter", code);
}

int alltoallv(KoloMpiComm* comm, const void* in, const size_t* send_bytes, void* out,
              const size_t* recv_bytes, KoloMpiError* error) {
  if (after_finalize(error)) return 1;
  MPI_Comm mpi_comm = resolve(comm);
  const int size = comm_size(mpi_comm);
  std::vector<int> send_counts;
  std::vector<int> send_displacements;
  std::vector<int> recv_counts;
  std::vector<int> recv_displacements;
  if (!to_int_layout(send_bytes, size, send_counts, send_displacements, error) ||
      !to_int_layout(recv_bytes, size, recv_counts, recv_displacements, error)) {
    return 1;
  }
  const int code = MPI_Alltoallv(in, send_counts.data(), send_displacements.data(), MPI_BYTE, out,
                                 recv_counts.data(), recv_displacements.data(), MPI_BYTE, mpi_comm);
  return code == MPI_SUCCESS ? 0 : fail(error, "MPI_Alltoallv", code);
}

int world(int* rank, int* size, KoloMpiError* error) {
  if (after_finalize(error)) return 1;
  if (int code = MPI_Comm_rank(MPI_COMM_WORLD, rank); code != MPI_SUCCESS) {
    return fail(error, "MPI_Comm_rank", code);
  }
  if (int code = MPI_Comm_size(MPI_COMM_WORLD, size); code != MPI_SUCCESS) {
    return fail(error, "MPI_Comm_size", code);
  }
  return 0;
}

}  // namespace kolo::backends::mpi_plugin
