// The MPI backend: each collective is one MPI call (through the plugin, libkolo_mpi.so) on a
// duplicate of MPI_COMM_WORLD owned by this session. Negotiation still runs over kolo's own
// transports; only the data moves through MPI. Average and pre/postscale are the executor's.
// Adasum is kolo's arithmetic over an MPI allgather.
#pragma once

#include "backends/backend.h"
#include "backends/mpi_plugin.h"

namespace kolo::backends {

class MpiBackend final : public Backend {
 public:
  // Collective over all ranks. Throws Error when MPI's world is not kolo's (a job not started by
  // mpirun or `kolorun --mpi` has an MPI world of one per process).
  MpiBackend(const MpiPlugin& plugin, int rank, int size);
  ~MpiBackend() override;
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;

  [[nodiscard]] std::string name() const override { return "mpi"; }
  // MPI's thread support (0 single .. 3 multiple), for hvd.mpi_threads_supported().
  [[nodiscard]] int thread_level() const { return thread_level_; }

  void allreduce(Bytes data, size_t count, DataType type, ReduceOp op) override;
  void allgatherv(ConstBytes mine, Bytes out, std::span<const size_t> bytes_per_rank) override;
  void broadcast(Bytes data, int root) override;
  void barrier() override;
  void reducescatter(Bytes data, std::span<const size_t> counts, DataType type, ReduceOp op,
                     Bytes out) override;
  void alltoallv(ConstBytes in, std::span<const size_t> send_bytes, Bytes out,
                 std::span<const size_t> recv_bytes) override;
  // MPI has no Adasum: every rank's vector is gathered, and each rank runs kolo's Adasum tree
  // on the whole vectors (comm::adasum_gathered). Costs size x the tensor in memory and traffic.
  void adasum(Bytes data, size_t count, DataType type) override;

 private:
  const KoloMpiPluginV1& mpi_;
  int size_;
  int thread_level_ = 0;
  KoloMpiComm* comm_ = nullptr;
};

}  // namespace kolo::backends
