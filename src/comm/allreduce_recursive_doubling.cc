// Recursive doubling allreduce: in round k each rank swaps its whole buffer with the partner
// whose (virtual) rank differs in bit k and both combine, so after log2(p) rounds every rank holds
// the total. For a size that is not a power of two, the first 2*extra ranks pair up beforehand:
// each even one hands its data to the odd one above it and sits out, and gets the final result
// back at the end (pairwise_exchange.h). Partners of a round always combine as (lower rank) op
// (higher rank), so both compute the same bits even for NaN payloads and signed zeros in min/max.
// The partner's values arrive a segment at a time in the communicator's reused scratch: no
// allocation per call (fresh pages for every large call cost 7x the model at 32 MiB,
// bench/SCALING.md) and none for small ones (a measurable part of an 8-byte allreduce).
#include "comm/collectives.h"
#include "comm/pairwise_exchange.h"

namespace kolo::comm {

void allreduce_recursive_doubling(Communicator& comm, Bytes data, size_t count, DataType type,
                                  ReduceOp op, const kernels::ResultScale& scale) {
  detail::allreduce_on_power_of_two_core(
      comm, "allreduce_recursive_doubling", data, count, type, op, scale,
      [&comm](const detail::CoreCall& call) {
        const int self = call.core.virtual_rank;
        for (int bit = 1; bit < call.core.size; bit <<= 1) {
          detail::exchange_and_fold(comm, call.core.rank_of(self ^ bit), call.mine, call.mine,
                                    call.element, call.combine, self < (self ^ bit), call.scratch);
        }
        // Every core member holds the whole total (the same bits on each).
        call.scale.apply(call.mine.data(), call.mine.size() / call.element, call.type);
      });
}

}  // namespace kolo::comm
