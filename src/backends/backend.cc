#include "backends/backend.h"

#include "base/errors.h"

namespace kolo::backends {

void Backend::unsupported(const std::string& operation) const {
  throw UnsupportedOperation("backend '" + name() + "' does not support " + operation);
}

void Backend::allreduce(Bytes, size_t, DataType, ReduceOp) { unsupported("allreduce"); }
void Backend::allreduce_scaled(Bytes data, size_t count, DataType type, ReduceOp op,
                               const kernels::ResultScale& scale) {
  scale.check(type);  // before any byte moves, as the kolo backend's algorithms
  allreduce(data, count, type, op);
  scale.apply(data.data(), count, type);
}
bool Backend::reduces_pieces(size_t) const { return false; }
void Backend::allreduce_pieces(std::span<const BufferPiece>, size_t, DataType, ReduceOp,
                               const kernels::ResultScale&) {
  unsupported("allreduce of pieces");
}
void Backend::allgatherv(ConstBytes, Bytes, std::span<const size_t>) { unsupported("allgather"); }
void Backend::broadcast(Bytes, int) { unsupported("broadcast"); }
void Backend::barrier() { unsupported("barrier"); }
void Backend::reducescatter(Bytes, std::span<const size_t>, DataType, ReduceOp, Bytes) {
  unsupported("reducescatter");
}
void Backend::alltoallv(ConstBytes, std::span<const size_t>, Bytes, std::span<const size_t>) {
  unsupported("alltoall");
}
void Backend::adasum(Bytes, size_t, DataType) { unsupported("Adasum"); }

}  // namespace kolo::backends
