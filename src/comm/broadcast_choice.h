// Where broadcast's automatic choice between groups' links turns from the binomial tree to
// scatter + allgather and then to the pipelined chain (bench/scaling/collective_steps.py,
// bench/SCALING.md "Broadcast and allgather" and "Session 23"). The tree's root sends the whole
// buffer to each of its ceil(log2 p) children, so its link carries depth x n bytes; scatter +
// allgather's carries 2n (p - 1) / p in p - 1 more steps; the chain's every link carries n once,
// but a chunk needs p - 2 more steps to reach the last rank. Each limit is where the bytes saved
// outweigh the steps added, in the model's terms.
#pragma once

#include <cstddef>

namespace kolo::comm {

// The chain's chunk: a rank forwards chunk k while chunk k + 1 arrives (the tree's segment).
inline constexpr size_t kBroadcastChunkBytes = size_t{512} * 1024;

// Bytes from which broadcast uses the chain on a group of `ranks` (never below 3 ranks: on 2 the
// two are the same single transfer). Below 8 ranks, against the tree: with alpha + chunk * beta
// worth about 1 MiB of transfer on a 25-100 Gb/s link (alpha 20 us), the chain wins once
// (depth - 1) * n > (ranks - 2) * 1 MiB: 1 MiB at 3 ranks, 2.5 MiB at 7; the model puts the
// crossing lower, and a high limit keeps the tree wherever the two are close. From 8 ranks,
// against scatter + allgather (which beats the tree well below): the chain saves n (p - 2) / p
// bytes per link and pays p - 2 chunks of fill, less depth steps, so it wins from about p chunks
// less p * depth / (p - 2) steps' worth (a fraction of a chunk at 25 Gb/s, one or two at
// 100 Gb/s in the model): from p - 1 chunks, 3.5 MiB at 8 ranks, 127.5 MiB at 256; both networks
// agree within 5% there.
size_t broadcast_chain_limit(int ranks);

// Bytes from which broadcast uses scatter + allgather (below the chain's limit) on a group of
// `ranks`: from 8 ranks (below, the two are within the model's error, bench/SCALING.md), where
// its p - 1 extra steps, alpha / beta = 128 KiB of transfer each, cost less than the bytes it
// saves against the tree (bench/scaling/collective_steps.py's broadcast_tree: (2 depth - 1) n
// within one segment, depth n + (depth - 1) segments beyond): 276 KiB at 8 ranks, 4.7 MiB at 256.
// alpha / beta is 149 KB at 100 Gb/s and 37 KB at 25 Gb/s (alpha 12.7 us, quiet-machine fit +
// a switch hop), a factor of 4 in the crossing; the limit follows 100 Gb/s (within 11% of the
// model's fastest there), and the tree stays up to 2.3x slower than scatter + allgather at
// 25 Gb/s between the two crossings: every loaded run measured a higher alpha (46.7 us, which puts
// 25 Gb/s where 100 Gb/s is here), and scatter + allgather's p - 1 neighbour-synchronised steps
// are the ones a straggler stalls, which the model does not see.
size_t broadcast_scatter_allgather_limit(int ranks);

}  // namespace kolo::comm
