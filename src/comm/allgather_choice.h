// Where allgatherv's automatic choice between groups' links turns from the ring to recursive
// doubling or Bruck's algorithm (bench/scaling/collective_steps.py, bench/SCALING.md "Broadcast
// and allgather"). All three move the same bytes per link, (p - 1) / p of the output; the ring
// takes p - 1 steps, doubling and Bruck log2 p on a power of two. On other sizes doubling takes
// floor(log2 p) + 2 steps and sends its extra ranks the whole output once more, Bruck
// ceil(log2 p) and nothing more: in the model (25-100 Gb/s, alpha 12.7 us) Bruck is 13-39%
// faster than doubling at 8 KiB and 39-110% at 512 KiB, from 6 to 255 ranks. At 256 ranks an
// 8 KiB allgather is 255 steps against 8: 3.2 ms against 0.10 ms at 25 Gb/s.
#pragma once

#include <cstddef>

namespace kolo::comm {

// Up to this total (all blocks) doubling and Bruck serve (MPICH turns to the ring at the same
// size: beyond it the two are bandwidth-bound alike, and the ring's neighbour-only traffic is
// kinder to a fabric without full bisection).
inline constexpr size_t kAllgatherDoublingMaxBytes = size_t{512} * 1024;

// Whether allgatherv on `ranks` ranks of `total_bytes` in all uses recursive doubling: a power of
// two from 4 ranks (log2 p < p - 1), below the limit.
bool allgather_doubling_serves(int ranks, size_t total_bytes);

// Whether it uses Bruck's algorithm: any other size from 5 ranks (ceil(log2 p) < p - 1; on 3
// ranks both take 2 steps and the ring needs no wrapped runs), below the same limit.
bool allgather_bruck_serves(int ranks, size_t total_bytes);

}  // namespace kolo::comm
