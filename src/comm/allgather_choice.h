// Where allgatherv's automatic choice between groups' links turns from the ring to recursive
// doubling (bench/scaling/collective_steps.py, bench/SCALING.md "Broadcast and allgather"). Both
// move the same bytes; the ring takes p - 1 steps, doubling log2 p (plus two for the extra ranks
// of a group that is not a power of two, which also receive the whole output once more at the
// end). At 256 ranks an 8 KiB allgather is 255 steps against 8: 5.3 ms against 0.17 ms at 25 Gb/s
// in the model.
#pragma once

#include <cstddef>

namespace kolo::comm {

// Up to this total (all blocks) doubling serves (MPICH turns to the ring at the same size: beyond
// it the two are bandwidth-bound alike, and the ring's neighbour-only traffic is kinder to a
// fabric without full bisection).
inline constexpr size_t kAllgatherDoublingMaxBytes = size_t{512} * 1024;

// Whether allgatherv on `ranks` ranks of `total_bytes` in all uses recursive doubling: a power of
// two from 4 ranks (log2 p < p - 1), other sizes from 6 (log2 P + 2 < p - 1), below the limit.
bool allgather_doubling_serves(int ranks, size_t total_bytes);

}  // namespace kolo::comm
