// backends::Backend: what executes one (possibly fused) collective on contiguous buffers. The kolo
// backend runs comm/ algorithms over kolo's own transports; MPI (a plugin) and NCCL (dlopen) come
// later. A backend that lacks an operation fails naming itself and the operation
// (UnsupportedOperation, before any byte moved): only that tensor fails, on every rank, and the
// runtime goes on.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "base/bytes.h"
#include "base/types.h"
#include "kernels/result_scale.h"

namespace kolo::backends {

class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual std::string name() const = 0;

  // In place over `count` elements.
  virtual void allreduce(Bytes data, size_t count, DataType type, ReduceOp op);
  // allreduce, then `scale` on the result (Average, postscale). This default makes a pass over
  // the result; a backend whose algorithms compute each total on one rank scales it there.
  virtual void allreduce_scaled(Bytes data, size_t count, DataType type, ReduceOp op,
                                const kernels::ResultScale& scale);
  // Whether allreduce_pieces serves a fused group of `bytes` (the same answer on every rank for
  // the same group and size): where the backend's algorithm for this size can work on pieces.
  [[nodiscard]] virtual bool reduces_pieces(size_t bytes) const;
  // allreduce_scaled over the concatenation of `pieces` (`count` elements in all), straight from
  // their inputs into their outputs, with no fusion buffer to pack them into.
  virtual void allreduce_pieces(std::span<const BufferPiece> pieces, size_t count, DataType type,
                                ReduceOp op, const kernels::ResultScale& scale);
  // out = every rank's block in rank order; bytes_per_rank[r] is rank r's block size.
  virtual void allgatherv(ConstBytes mine, Bytes out, std::span<const size_t> bytes_per_rank);
  virtual void broadcast(Bytes data, int root);
  virtual void barrier();
  // `data` holds sum(counts) elements (work area, clobbered); rank r gets op over block r in
  // `out` (counts[r] elements). Uneven counts allowed.
  virtual void reducescatter(Bytes data, std::span<const size_t> counts, DataType type, ReduceOp op,
                             Bytes out);
  // `in`: one block per destination (send_bytes[r] bytes for rank r); `out`: one block per
  // source (recv_bytes[r] bytes from rank r).
  virtual void alltoallv(ConstBytes in, std::span<const size_t> send_bytes, Bytes out,
                         std::span<const size_t> recv_bytes);
  // In place over `count` floating-point elements: the Adasum combination of every rank's data.
  virtual void adasum(Bytes data, size_t count, DataType type);

 protected:
  // Throws UnsupportedOperation "backend '<name>' does not support <operation>".
  [[noreturn]] void unsupported(const std::string& operation) const;
};

}  // namespace kolo::backends
