// The default backend: kolo's own algorithms (comm/) over its own transports.
#pragma once

#include "backends/backend.h"
#include "comm/adasum.h"
#include "comm/collectives.h"

namespace kolo::backends {

class KoloBackend final : public Backend {
 public:
  KoloBackend(comm::Communicator& comm, comm::AllreduceOptions options)
      : comm_(comm), options_(options) {}
  [[nodiscard]] std::string name() const override { return "kolo"; }

  void allreduce(Bytes data, size_t count, DataType type, ReduceOp op) override {
    comm::allreduce(comm_, data, count, type, op, options_);
  }
  void allreduce_scaled(Bytes data, size_t count, DataType type, ReduceOp op,
                        const kernels::ResultScale& scale) override {
    comm::allreduce(comm_, data, count, type, op, options_, scale);
  }
  // The host arena works on pieces (comm/piece_list.h); the other algorithms take the buffer.
  [[nodiscard]] bool reduces_pieces(size_t bytes) const override {
    return comm::allreduce_takes_arena(comm_, bytes, options_);
  }
  void allreduce_pieces(std::span<const BufferPiece> pieces, size_t, DataType type, ReduceOp op,
                        const kernels::ResultScale& scale) override {
    comm::allreduce_shared_memory(comm_, comm::PieceList(pieces), type, op, scale);
  }
  void allgatherv(ConstBytes mine, Bytes out, std::span<const size_t> bytes_per_rank) override {
    comm::allgatherv(comm_, mine, out, bytes_per_rank);
  }
  void broadcast(Bytes data, int root) override { comm::broadcast(comm_, data, root); }
  void barrier() override { comm::barrier(comm_); }
  void reducescatter(Bytes data, std::span<const size_t> counts, DataType type, ReduceOp op,
                     Bytes out) override {
    comm::reducescatter(comm_, data, counts, type, op, out);
  }
  void alltoallv(ConstBytes in, std::span<const size_t> send_bytes, Bytes out,
                 std::span<const size_t> recv_bytes) override {
    comm::alltoallv(comm_, in, send_bytes, out, recv_bytes);
  }
  void adasum(Bytes data, size_t count, DataType type) override {
    comm::adasum(comm_, data, count, type);
  }

 private:
  comm::Communicator& comm_;
  comm::AllreduceOptions options_;
};

}  // namespace kolo::backends
