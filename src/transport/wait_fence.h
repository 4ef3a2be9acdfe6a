// The sleeper's fence of shared-memory links: an asymmetric Dekker handshake in which a reader
// about to sleep pays one heavy fence so that writers publish with only a compiler barrier.
//
// A writer stores its data, then reads the reader's "waiting" flag; the reader stores that flag,
// then reads the data. Without a full barrier between store and load on *both* sides each may
// miss the other's store (store buffering), and the reader sleeps on data already written with
// no doorbell coming. A full barrier per message would stall every writer until its store left
// its core. Instead membarrier(2) MEMBARRIER_CMD_GLOBAL_EXPEDITED, issued by the reader between
// its flag stores and its data loads, runs a full barrier on every CPU currently running a
// process that registered (join_wait_fences): a registered writer's compiler barrier is then
// enough. The fence is process-wide, not per link, so a reader waiting on several links arms
// every one of them, issues one fence and then looks at every one (WaitArming, wait_arming.h).
//
// A process that cannot register (old kernel, seccomp) falls back to full barriers on both sides:
// it does not announce fences to its writers, and as a reader it looks at its links right after
// each arm's own full barrier, asking for no fence.
#pragma once

namespace kolo::transport {

// Registers this process for the fence (idempotent, a system call each time: call it when a
// link is made, not per message). False when the kernel refuses: use full barriers.
bool join_wait_fences();

// The fence itself: a full barrier on every CPU running a registered process. Costly (it
// interrupts those CPUs): once per sleep, never per message.
void wait_fence();

}  // namespace kolo::transport
