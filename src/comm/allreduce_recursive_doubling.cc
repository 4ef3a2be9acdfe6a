// Recursive doubling allreduce: in round k each rank swaps its whole buffer with the partner
// whose (virtual) rank differs in bit k and both combine, so after log2(p) rounds every rank holds
// the total. For a size that is not a power of two, the first 2*extra ranks pair up beforehand:
// each even one hands its data to the odd one above it and sits out, and gets the final result
// back at the end. Partners always combine as (lower rank) op (higher rank), so both compute the
// same bits even for NaN payloads and signed zeros in min/max.
#include <cstring>
#include <memory>

#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "kernels/reduce.h"

namespace kolo::comm {

void allreduce_recursive_doubling(Communicator& comm, Bytes data, size_t count, DataType type,
                                  ReduceOp op) {
  const kernels::ReduceFn combine = kernels::reduce_function(type, op);
  const size_t bytes =
      detail::checked_bytes(comm, "allreduce_recursive_doubling", data.size(), count, type);
  const int n = comm.size();
  if (n == 1 || count == 0) return;

  int p = 1;  // largest power of two <= n
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;
  const int rank = comm.rank();
  const Bytes mine = data.first(bytes);
  // Scratch for the partner's buffer: on the stack for latency-bound sizes (a heap allocation
  // is a measurable part of an 8-byte allreduce over shared memory), else allocated per call.
  constexpr size_t kStackScratch = 1024;
  alignas(64) std::byte small[kStackScratch];
  std::unique_ptr<std::byte[]> large;
  if (bytes > kStackScratch) large = std::make_unique_for_overwrite<std::byte[]>(bytes);
  const Bytes theirs(large ? large.get() : small, bytes);

  // Fold: ranks below 2*extra pair up; the odd one continues with both contributions.
  int virtual_rank = -1;
  if (rank < 2 * extra) {
    if (rank % 2 == 0) {
      comm.send(rank + 1, mine);
    } else {
      comm.recv(rank - 1, theirs);
      combine(mine.data(), theirs.data(), count);
      virtual_rank = rank / 2;
    }
  } else {
    virtual_rank = rank - extra;
  }

  if (virtual_rank >= 0) {
    for (int bit = 1; bit < p; bit <<= 1) {
      const int virtual_partner = virtual_rank ^ bit;
      const int partner =
          virtual_partner < extra ? virtual_partner * 2 + 1 : virtual_partner + extra;
      comm.send_recv(partner, mine, partner, theirs);
      if (virtual_rank < virtual_partner) {
        combine(mine.data(), theirs.data(), count);
      } else {
        combine(theirs.data(), mine.data(), count);
        std::memcpy(mine.data(), theirs.data(), bytes);
      }
    }
  }

  // Unfold: the ranks that sat out receive the result from their partner.
  if (rank < 2 * extra) {
    if (rank % 2 == 0) {
      comm.recv(rank + 1, mine);
    } else {
      comm.send(rank - 1, mine);
    }
  }
}

}  // namespace kolo::comm
