// Where allreduce's automatic choice turns from recursive doubling to the ring on a group of
// `ranks`. Recursive doubling takes log2(ranks) steps but moves and folds the whole buffer in each;
// the ring moves about twice the buffer in all but takes 2(ranks-1) steps. The more ranks, the
// more the ring's extra steps cost, so the crossing size grows: bench/SCALING.md's model puts it
// at 0.4-0.8 MiB for 8 ranks and 4-9 MiB for 256 ranks on 25-100 Gb/s networks, while a fixed
// 64 KiB would send 64 KiB..4 MiB through 2(p-1) ring steps, 2-10x slower.
#pragma once

#include <cstddef>

namespace kolo::comm {

// `small_message_bytes` (KOLO_SMALL_ALLREDUCE_BYTES) is the limit for groups of up to 4 ranks,
// where it was tuned; larger groups scale it by the ratio of steps the ring spends beyond
// recursive doubling to the extra bytes recursive doubling moves and folds (each byte's transfer
// and fold weighed alike), relative to 4 ranks. Never below `small_message_bytes`; 0 stays 0.
size_t recursive_doubling_limit(size_t small_message_bytes, int ranks);

}  // namespace kolo::comm
