#include "backends/mpi_backend.h"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "base/copy_bytes.h"
#include "base/errors.h"
#include "comm/adasum.h"

namespace kolo::backends {

namespace {

std::string reduction_text(const char* what, size_t count, DataType type, ReduceOp op) {
  return fmt::format("MPI backend: {} of {} {} elements with {}", what, count, dtype_name(type),
                     reduce_op_name(op));
}

}  // namespace

MpiBackend::MpiBackend(const MpiPlugin& plugin, int rank, int size)
    : mpi_(plugin.table()), size_(size) {
  thread_level_ = plugin.initialize();
  const auto [mpi_rank, mpi_size] = plugin.world();
  if (mpi_size != size || mpi_rank != rank) {
    throw Error(fmt::format(
        "KOLO_CPU_OPERATIONS/HOROVOD_CPU_OPERATIONS=mpi: this process is rank {} of {} in "
        "MPI_COMM_WORLD but rank {} of {} in the kolo job. The MPI backend needs the job started "
        "by mpirun (or `kolorun --mpi`), whose ranks are MPI's; plain kolorun starts each rank "
        "as an MPI world of its own",
        mpi_rank, mpi_size, rank, size));
  }
  KoloMpiError error{};
  MpiPlugin::check(mpi_.comm_create(&comm_, &error), error, "MPI backend: MPI_Comm_dup");
}

MpiBackend::~MpiBackend() {
  KoloMpiError error{};
  (void)mpi_.comm_free(comm_, &error);  // nothing to do about a failure while tearing down
}

void MpiBackend::allreduce(Bytes data, size_t count, DataType type, ReduceOp op) {
  KoloMpiError error{};
  MpiPlugin::check(mpi_.allreduce(comm_, data.data(), count, static_cast<int>(type),
                                  static_cast<int>(op), &error),
                   error, reduction_text("allreduce", count, type, op));
}

void MpiBackend::allgatherv(ConstBytes mine, Bytes out, std::span<const size_t> bytes_per_rank) {
  if (static_cast<int>(bytes_per_rank.size()) != size_) {
    throw InvalidArgument(fmt::format("MPI backend: allgather got {} block sizes for {} ranks",
                                      bytes_per_rank.size(), size_));
  }
  KoloMpiError error{};
  MpiPlugin::check(mpi_.allgatherv(comm_, mine.data(), out.data(), bytes_per_rank.data(), &error),
                   error, fmt::format("MPI backend: allgather of {} bytes", out.size()));
}

void MpiBackend::broadcast(Bytes data, int root) {
  KoloMpiError error{};
  MpiPlugin::check(
      mpi_.broadcast(comm_, data.data(), data.size(), root, &error), error,
      fmt::format("MPI backend: broadcast of {} bytes from rank {}", data.size(), root));
}

void MpiBackend::barrier() {
  KoloMpiError error{};
  MpiPlugin::check(mpi_.barrier(comm_, &error), error, "MPI backend: barrier");
}

void MpiBackend::reducescatter(Bytes data, std::span<const size_t> counts, DataType type,
                               ReduceOp op, Bytes out) {
  if (static_cast<int>(counts.size()) != size_) {
    throw InvalidArgument(fmt::format("MPI backend: reducescatter got {} block counts for {} ranks",
                                      counts.size(), size_));
  }
  KoloMpiError error{};
  MpiPlugin::check(mpi_.reducescatter(comm_, data.data(), counts.data(), static_cast<int>(type),
                                      static_cast<int>(op), out.data(), &error),
                   error,
                   reduction_text("reducescatter", data.size() / dtype_size(type), type, op));
}

void MpiBackend::alltoallv(ConstBytes in, std::span<const size_t> send_bytes, Bytes out,
                           std::span<const size_t> recv_bytes) {
  if (static_cast<int>(send_bytes.size()) != size_ ||
      static_cast<int>(recv_bytes.size()) != size_) {
    throw InvalidArgument(fmt::format("MPI backend: alltoall got {}/{} block sizes for {} ranks",
                                      send_bytes.size(), recv_bytes.size(), size_));
  }
  KoloMpiError error{};
  MpiPlugin::check(
      mpi_.alltoallv(comm_, in.data(), send_bytes.data(), out.data(), recv_bytes.data(), &error),
      error, fmt::format("MPI backend: alltoall of {} bytes", in.size()));
}

void MpiBackend::adasum(Bytes data, size_t count, DataType type) {
  if (!comm::adasum_supports(type)) {  // before any byte moves: the same answer on every rank
    throw InvalidArgument(
        fmt::format("MPI backend: Adasum needs floating-point data, got {}", dtype_name(type)));
  }
  const size_t bytes = count * dtype_size(type);
  if (data.size() < bytes) {
    throw InvalidArgument(
        fmt::format("MPI backend: Adasum buffer has {} bytes, needs {}", data.size(), bytes));
  }
  if (size_ == 1 || count == 0) return;
  std::vector<std::byte> gathered(bytes * static_cast<size_t>(size_));
  const std::vector<size_t> blocks(static_cast<size_t>(size_), bytes);
  allgatherv(data.first(bytes), gathered, blocks);
  comm::adasum_gathered(gathered, size_, count, type);
  copy_bytes(data.data(), gathered.data(), bytes);
}

}  // namespace kolo::backends
