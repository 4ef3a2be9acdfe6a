// Internal to comm/: the reduce-scatter rounds of a ring, shared by ring allreduce and
// reducescatter. Block b of `data` is elements [first[b], first[b+1]). In round s rank r sends
// block r-s-shift to its right neighbour while receiving block r-s-shift-1 from its left one and
// folding it in; after size-1 rounds rank r holds the full result of block r+1-shift.
// Rounds run in segments (the same count on every rank, from the largest block) so an incoming
// segment is folded in while it is still in cache and the peer keeps filling the link meanwhile.
#pragma once

#include <span>

#include "comm/communicator.h"
#include "kernels/reduce.h"

namespace kolo::comm::detail {

void ring_reduce_scatter(Communicator& comm, Bytes data, std::span<const size_t> first,
                         size_t element, kernels::ReduceFn combine, int shift);

// b modulo n, for ring positions that may be negative.
inline int ring_position(int b, int n) { return ((b % n) + n) % n; }

}  // namespace kolo::comm::detail
