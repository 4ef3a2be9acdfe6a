// allgatherv by recursive doubling: among the largest power of two P <= p ranks (the core of
// pairwise_exchange.h), at distance 1, 2, .., P/2 partners swap all the blocks they hold, which
// doubles them, so log2 P steps instead of the ring's p - 1. Blocks are in rank order in `out`
// and a core member's blocks are always a run of consecutive ranks, so every transfer is one
// contiguous range. A group that is not a power of two first has each of its first p - P even
// ranks hand its block to the odd rank above it (whose core member then holds both), and gives
// them the whole output at the end. Blocks may differ in size or be empty.
#include <cstring>
#include <vector>

#include "base/copy_bytes.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/pairwise_exchange.h"

namespace kolo::comm {

void allgatherv_doubling(Communicator& comm, ConstBytes mine, Bytes out,
                         std::span<const size_t> bytes_per_rank) {
  const std::vector<size_t> offset =
      detail::checked_blocks(comm, "allgatherv_doubling", mine, out, bytes_per_rank);
  const int n = comm.size();
  const int rank = comm.rank();
  if (!mine.empty()) move_bytes(out.data() + offset[rank], mine.data(), mine.size());
  if (n == 1) return;

  const detail::PowerOfTwoCore core = detail::power_of_two_core(rank, n);
  // The first rank of core member v's run; core.size gives the end of the last run.
  auto first_rank = [&](int v) { return v < core.extra ? 2 * v : v + core.extra; };
  auto members = [&](int low, int high) {  // the blocks of core members [low, high)
    const size_t begin = offset[first_rank(low)];
    return out.subspan(begin, offset[first_rank(high)] - begin);
  };
  const bool paired = rank < 2 * core.extra;
  if (paired && rank % 2 == 0) {
    comm.send(rank + 1, out.subspan(offset[rank], bytes_per_rank[rank]));
  } else if (paired) {
    comm.recv(rank - 1, out.subspan(offset[rank - 1], bytes_per_rank[rank - 1]));
  }
  if (core.virtual_rank >= 0) {
    const int self = core.virtual_rank;
    for (int distance = 1; distance < core.size; distance *= 2) {
      const int held = self & ~(distance - 1);  // this member holds [held, held + distance)
      const int theirs = held ^ distance;
      const int partner = core.rank_of(self ^ distance);
      comm.send_recv(partner, members(held, held + distance), partner,
                     members(theirs, theirs + distance));
    }
  }
  const Bytes whole = out.first(offset[n]);
  if (paired && rank % 2 == 0) {
    comm.recv(rank + 1, whole);
  } else if (paired) {
    comm.send(rank - 1, whole);
  }
}

}  // namespace kolo::comm
