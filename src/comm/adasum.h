// Adasum (Maleki et al., "Scaling Distributed Training with Adaptive Summation"): combines two
// gradients a and b as
//     a' = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
// (a coefficient is 1 where that vector is all zeros), which sums orthogonal gradients and
// averages parallel ones. Across ranks the combination is applied as a binary tree, the way
// Horovod's CPU Adasum does it: with p = size a power of two, level d = 1, 2, 4, ... combines the
// result of ranks [base, base + d) (a) with that of [base + d, base + 2d) (b). The vectors are
// never gathered whole: each level halves the part every rank holds (recursive vector halving)
// and the three dot products are summed over the 2d ranks that together hold a and b; a final
// distance-halving allgather gives every rank the whole result.
//
// Sizes that are not a power of two (Horovod's CPU path refuses them): with p the largest power
// of two below size, rank p + i first sends its vector to rank i, which replaces its own with
// adasum(own, received); the p low ranks run the tree; rank i sends the result back to p + i.
// For 3 ranks the result is adasum(adasum(g0, g2), g1).
//
// Dot products and combinations are computed in double; float16/bfloat16/float32/float64 data.
#pragma once

#include <cstddef>

#include "base/types.h"
#include "comm/communicator.h"

namespace kolo::comm {

// In place over `count` elements of `type` (identical on every rank afterwards). Throws
// InvalidArgument for a type Adasum does not apply to (integers) before anything is sent.
void adasum(Communicator& comm, Bytes data, size_t count, DataType type);

// One pairwise combination, a <- adasum(a, b), on `count` elements of `type`: the reference
// step of the tree (used by the size-folding step and by tests).
void adasum_combine(void* a, const void* b, size_t count, DataType type);

// The same Adasum computed on one rank from every rank's whole vector: `gathered` holds `ranks`
// blocks of `count` elements of `type` in rank order; the result lands in block 0. Same folds,
// tree and per-level rounding to `type` as adasum(); only the dot products are summed in another
// order. For backends that move bytes but do not run kolo's algorithms (MPI): one allgather,
// then this on every rank, which all get bit-identical results.
void adasum_gathered(Bytes gathered, int ranks, size_t count, DataType type);

// Whether Adasum applies to `type` (floating point).
bool adasum_supports(DataType type);

}  // namespace kolo::comm
