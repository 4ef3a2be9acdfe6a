// Where broadcast's automatic choice between groups' links turns from the binomial tree to
// scatter + allgather and then to the pipelined chain (bench/scaling/collective_steps.py,
// bench/SCALING.md "Broadcast and allgather"). The tree's root sends the whole buffer to each of
// its ceil(log2 p) children, so its link carries depth x n bytes; the chain's every link carries n
// once, but a chunk needs p - 2 more steps to reach the last rank. Past this size the bytes the
// chain saves outweigh its extra steps.
#pragma once

#include <cstddef>

namespace kolo::comm {

// The chain's chunk: a rank forwards chunk k while chunk k + 1 arrives (the tree's segment).
inline constexpr size_t kBroadcastChunkBytes = size_t{512} * 1024;

// Bytes from which broadcast uses the chain on a group of `ranks` (never below 3 ranks: on 2 the
// two are the same single transfer). With alpha + chunk * beta worth about 1 MiB of transfer on
// a 25-100 Gb/s link (alpha 20 us), the chain wins once (depth - 1) * n > (ranks - 2) * 1 MiB:
// 1 MiB at 3 ranks, 3 MiB at 8, 36 MiB at 256; the model puts the crossing lower, and a high
// limit keeps the tree wherever the two are close.
size_t broadcast_chain_limit(int ranks);

// Bytes from which broadcast uses scatter + allgather (below the chain's limit) on a group of
// `ranks`: from 8 ranks (below, the two are within the model's error, bench/SCALING.md), where
// its p - 1 extra steps (128 KiB of transfer each, alpha / beta at 25 Gb/s and 20 us is 59 KB,
// at 100 Gb/s 235 KB) cost less than the bytes it saves the tree's root, (depth - 2(p-1)/p) n:
// 717 KiB at 8 ranks, 5.4 MiB at 256.
size_t broadcast_scatter_allgather_limit(int ranks);

}  // namespace kolo::comm
