// Where allreduce's automatic choice turns from recursive doubling to the ring on a group of
// `ranks`, and where halving-doubling takes over from the ring. Recursive doubling takes
// log2(ranks) steps but moves and folds the whole buffer in each; the ring moves about twice the
// buffer in all but takes 2(ranks-1) steps. The more ranks, the more the ring's extra steps cost,
// so the crossing size grows: bench/SCALING.md's model puts it at 0.4-0.8 MiB for 8 ranks and 4-9
// MiB for 256 ranks on 25-100 Gb/s networks, while a fixed 64 KiB would send 64 KiB..4 MiB through
// 2(p-1) ring steps, 2-10x slower. Halving-doubling moves and folds exactly the ring's bytes on a
// power of two in 2 log2(ranks) steps, so there it beats the ring at every size; on other sizes
// its extra ranks' fold-in and hand-back add a whole buffer's transfer and fold, so the ring wins
// again past a size that grows with the steps halving-doubling saves.
#pragma once

#include <cstddef>

namespace kolo::comm {

// `small_message_bytes` (KOLO_SMALL_ALLREDUCE_BYTES) is the limit for groups of up to 4 ranks,
// where it was tuned; larger groups scale it by the ratio of steps the ring spends beyond
// recursive doubling to the extra bytes recursive doubling moves and folds (each byte's transfer
// and fold weighed alike), relative to 4 ranks. Never below `small_message_bytes`; 0 stays 0.
size_t recursive_doubling_limit(size_t small_message_bytes, int ranks);

// Fewest ranks for which automatic allreduce runs halving-doubling (from the recursive-doubling
// limit up): below, nothing changed where kolo was tuned and measured (2-6 ranks), and
// halving-doubling's 2 log2 P steps save little over the ring's 2(p-1) (4 ranks: 4 vs 6).
constexpr int kHalvingDoublingMinRanks = 8;

// Automatic allreduce runs halving-doubling from the recursive-doubling limit up to this many
// bytes (exclusive), the ring beyond. 0 below kHalvingDoublingMinRanks; unlimited (SIZE_MAX) on a
// power of two; otherwise `small_message_bytes` scaled as recursive_doubling_limit is, by the
// steps halving-doubling saves over the ring per extra byte it moves and folds (0 stays 0).
size_t halving_doubling_limit(size_t small_message_bytes, int ranks);

}  // namespace kolo::comm
