// Recursive doubling allreduce: in round k each rank swaps its whole buffer with the partner
// whose (virtual) rank differs in bit k and both combine, so after log2(p) rounds every rank holds
// the total. For a size that is not a power of two, the first 2*extra ranks pair up beforehand:
// each even one hands its data to the odd one above it and sits out, and gets the final result
// back at the end (pairwise_exchange.h). Partners always combine as (lower rank) op (higher
// rank), so both compute the same bits even for NaN payloads and signed zeros in min/max.
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/pairwise_exchange.h"
#include "kernels/reduce.h"

namespace kolo::comm {

void allreduce_recursive_doubling(Communicator& comm, Bytes data, size_t count, DataType type,
                                  ReduceOp op) {
  const kernels::ReduceFn combine = kernels::reduce_function(type, op);
  const size_t bytes =
      detail::checked_bytes(comm, "allreduce_recursive_doubling", data.size(), count, type);
  const int n = comm.size();
  if (n == 1 || count == 0) return;

  const size_t element = dtype_size(type);
  const detail::PowerOfTwoCore core = detail::power_of_two_core(comm.rank(), n);
  const Bytes mine = data.first(bytes);
  // The partner's values arrive a segment at a time in the communicator's reused scratch: no
  // allocation per call (fresh pages for every large call cost 7x the model at 32 MiB,
  // bench/SCALING.md) and none for small ones (a measurable part of an 8-byte allreduce).
  const Bytes scratch = detail::fold_scratch(comm, bytes, element);

  detail::fold_extra_ranks_in(comm, core, mine, element, combine, scratch);
  if (core.virtual_rank >= 0) {
    for (int bit = 1; bit < core.size; bit <<= 1) {
      const int virtual_partner = core.virtual_rank ^ bit;
      detail::exchange_and_fold(comm, core.rank_of(virtual_partner), mine, mine, element, combine,
                                core.virtual_rank < virtual_partner, scratch);
    }
  }
  detail::send_result_to_extra_ranks(comm, core, mine);
}

}  // namespace kolo::comm
