// Internal to comm/: the pieces recursive doubling and halving-doubling share. Both run their
// rounds among the largest power of two P <= size ranks (the "core"); for other sizes the first
// 2*(size-P) ranks pair up beforehand, each even one handing its data to the odd one above it,
// and get the result back at the end. Each element's folds happen in an order fixed by the group
// size alone. Where two partners fold the same elements (recursive doubling's rounds) both
// combine (lower rank's values) op (higher rank's values), so they compute the same bits even for
// NaN payloads and signed zeros in min/max; where one rank alone folds them (the fold-in,
// halving-doubling's reduce-scatter) it combines its own values first, which saves a copy per
// segment (measured at np 2 over loopback TCP: the copy made 64 MiB 5% slower), and the others
// receive its bits.
#pragma once

#include <cstddef>

#include "base/types.h"
#include "comm/collective_checks.h"
#include "comm/communicator.h"
#include "kernels/reduce.h"
#include "kernels/result_scale.h"

namespace kolo::comm::detail {

struct PowerOfTwoCore {
  int size = 1;           // P
  int extra = 0;          // group size - P
  int virtual_rank = -1;  // this rank's place among the P; -1 while it sits out

  // The group rank of core member `virtual_rank` (increasing with it).
  [[nodiscard]] int rank_of(int virtual_rank_of_peer) const {
    return virtual_rank_of_peer < extra ? virtual_rank_of_peer * 2 + 1
                                        : virtual_rank_of_peer + extra;
  }
};

PowerOfTwoCore power_of_two_core(int rank, int group_size);

// Folds are done one segment at a time through a scratch buffer of at most this many bytes, so
// an incoming segment is folded while still in cache (as ring_reduce_scatter does) and a call
// needs no buffer of the message's size.
constexpr size_t kFoldSegmentBytes = size_t{1} << 20;

// The communicator's reused scratch, sized for folding `bytes` of `element`-byte values.
Bytes fold_scratch(Communicator& comm, size_t bytes, size_t element);

// Sends `outgoing` to `partner` while receiving the partner's values of `target`'s elements and
// folds them in: target = mine op theirs when `mine_first`, else theirs op mine (one more copy of
// each segment, still in cache).
// `outgoing` may be `target` itself: each segment is sent before it is folded. Both partners cut
// their transfers into the same number of segments (from the larger of the two ranges, which
// both know), so segment k of one's outgoing meets segment k of the other's target.
void exchange_and_fold(Communicator& comm, int partner, ConstBytes outgoing, Bytes target,
                       size_t element, kernels::ReduceFn combine, bool mine_first, Bytes scratch);

// Before the core's rounds: the ranks below 2*extra pair up and the odd one folds in the even
// one's `mine`, its own values first (a no-op for the other ranks).
void fold_extra_ranks_in(Communicator& comm, const PowerOfTwoCore& core, Bytes mine, size_t element,
                         kernels::ReduceFn combine, Bytes scratch);

// After the core's rounds: the odd ranks below 2*extra send the result to the even ones.
void send_result_to_extra_ranks(Communicator& comm, const PowerOfTwoCore& core, Bytes mine);

// What the core's rounds work on.
struct CoreCall {
  PowerOfTwoCore core;
  Bytes mine;  // the buffer's `bytes`
  size_t element;
  DataType type;
  kernels::ReduceFn combine;
  Bytes scratch;  // fold_scratch
  // The rounds apply it to each element once, where its total is computed (the extra ranks
  // receive finished values).
  const kernels::ResultScale& scale;
};

// The frame both algorithms share: the argument checks, nothing to do for one rank or zero
// elements, the extra ranks folded in, `rounds(call)` on the core's members, the result handed
// back. A template, not a std::function: an 8-byte allreduce must not allocate.
template <typename Rounds>
void allreduce_on_power_of_two_core(Communicator& comm, const char* collective, Bytes data,
                                    size_t count, DataType type, ReduceOp op,
                                    const kernels::ResultScale& scale, Rounds&& rounds) {
  const kernels::ReduceFn combine = kernels::reduce_function(type, op);
  const size_t bytes = checked_bytes(comm, collective, data.size(), count, type);
  scale.check(type);
  if (comm.size() == 1 || count == 0) return scale.apply(data.data(), count, type);
  const size_t element = dtype_size(type);
  const CoreCall call{power_of_two_core(comm.rank(), comm.size()),
                      data.first(bytes),
                      element,
                      type,
                      combine,
                      fold_scratch(comm, bytes, element),
                      scale};
  fold_extra_ranks_in(comm, call.core, call.mine, element, combine, call.scratch);
  if (call.core.virtual_rank >= 0) rounds(call);
  send_result_to_extra_ranks(comm, call.core, call.mine);
}

}  // namespace kolo::comm::detail
