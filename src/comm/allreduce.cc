// allreduce: picks the algorithm. Recursive doubling needs log2(size) rounds of whole-buffer
// messages (latency-bound sizes); the ring moves 2(size-1)/size of the buffer per rank in
// 2(size-1) rounds (bandwidth-bound sizes). Ranks over several hosts, several per host: the
// hierarchical algorithm (unless switched off).
#include "comm/collectives.h"
#include "comm/reduce.h"

namespace kolo::comm {

void allreduce(Communicator& comm, Bytes data, size_t count, DataType type, ReduceOp op,
               const AllreduceOptions& options) {
  switch (options.algorithm) {
    case AllreduceAlgorithm::ring:
      return allreduce_ring(comm, data, count, type, op);
    case AllreduceAlgorithm::recursive_doubling:
      return allreduce_recursive_doubling(comm, data, count, type, op);
    case AllreduceAlgorithm::hierarchical:
      return allreduce_hierarchical(comm, data, count, type, op, options);
    case AllreduceAlgorithm::automatic:
      break;
  }
  if (options.hierarchical != Hierarchical::off && hierarchical_applies(comm)) {
    return allreduce_hierarchical(comm, data, count, type, op, options);
  }
  const size_t bytes = count * dtype_size(type);
  // With fewer elements than ranks most ring chunks are empty: rounds without payload.
  if (bytes < options.small_message_bytes || count < static_cast<size_t>(comm.size())) {
    return allreduce_recursive_doubling(comm, data, count, type, op);
  }
  allreduce_ring(comm, data, count, type, op);
}

}  // namespace kolo::comm
