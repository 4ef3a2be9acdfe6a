// Halving-doubling allreduce (Rabenseifner's algorithm, MPICH's large-message allreduce): the
// ring's bandwidth (each rank sends and folds 2(P-1)/P and (P-1)/P of the buffer) in 2 log2 P
// steps instead of the ring's 2(P-1).
//
// The buffer is cut into P blocks on element boundaries (some empty when count < P). Reduce-scatter
// by recursive halving: rank v still reduces a range of blocks; with the partner at distance d
// (P/2, P/4, .., 1) it keeps the half of the range on its own side of d, sends the other half and
// folds in the partner's values of the kept half. After log2 P rounds rank v holds the total of
// block v. Allgather by recursive doubling: at distance 1, 2, .., P/2 partners swap the ranges
// they hold, which doubles them. Group sizes that are not a power of two fold their extra ranks
// in first and hand them the result at the end, as recursive doubling does (pairwise_exchange.h).
// Each block's total is folded on one rank alone, in an order fixed by the group size (the
// keeper's values first: no copy back), and copied everywhere else, so every rank ends with
// identical bits.
#include <algorithm>

#include "comm/collectives.h"
#include "comm/pairwise_exchange.h"

namespace kolo::comm {

void allreduce_halving_doubling(Communicator& comm, Bytes data, size_t count, DataType type,
                                ReduceOp op, const kernels::ResultScale& scale) {
  detail::allreduce_on_power_of_two_core(
      comm, "allreduce_halving_doubling", data, count, type, op, scale,
      [&comm, count](const detail::CoreCall& call) {
        const auto blocks = static_cast<size_t>(call.core.size);
        // Blocks [low, high): block b starts at element count/P*b + min(b, count%P).
        auto range = [&](int low, int high) {
          auto first = [&](int b) {
            const auto block = static_cast<size_t>(b);
            return count / blocks * block + std::min(block, count % blocks);
          };
          return call.mine.subspan(first(low) * call.element,
                                   (first(high) - first(low)) * call.element);
        };
        const int self = call.core.virtual_rank;
        int low = 0;
        int high = call.core.size;
        for (int distance = call.core.size / 2; distance >= 1; distance /= 2) {
          const int middle = low + distance;
          const bool lower = (self & distance) == 0;
          const Bytes keep = lower ? range(low, middle) : range(middle, high);
          const Bytes give = lower ? range(middle, high) : range(low, middle);
          detail::exchange_and_fold(comm, call.core.rank_of(self ^ distance), give, keep,
                                    call.element, call.combine, /*mine_first=*/true, call.scratch);
          (lower ? high : low) = middle;
        }
        // Now [low, high) is block `self` alone, its total computed here only: scaled here. The
        // partner at distance d holds the aligned d blocks next to this rank's.
        const Bytes total = range(low, high);
        call.scale.apply(total.data(), total.size() / call.element, call.type);
        for (int distance = 1; distance < call.core.size; distance *= 2) {
          const int theirs = low ^ distance;
          const int partner = call.core.rank_of(self ^ distance);
          comm.send_recv(partner, range(low, high), partner, range(theirs, theirs + distance));
          low = std::min(low, theirs);
          high = low + 2 * distance;
        }
      });
}

}  // namespace kolo::comm
