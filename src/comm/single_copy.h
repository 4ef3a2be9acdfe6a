// Single-copy transfers between the ranks of one host: a rank reads a peer's buffer straight from
// the peer's memory (Linux cross-memory attach, process_vm_readv(2)) instead of the peer copying
// it into its arena slot and the rank copying it out again. The arena still carries the
// handshake: each rank publishes where its block is (pid, address, bytes) in its slot half and
// posts `ready`; readers post `reduced` once they have read, and a block's owner leaves the
// collective only after every reader did, so its buffer stays valid while it is read.
//
// Half the bytes moved, at the price of a second flag round: the allgather of 256 KiB at np 2
// (128 KiB per rank) reads in ~6.5 us what the two copies did in ~17 (this VM). Whether a job
// may use it is probed once, by every member together, at the first collective that would: a
// kernel without the call, a container whose seccomp profile refuses it, or a member with
// KOLO_SHM_SINGLE_COPY=0 makes every member keep the two copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "comm/collective_arena.h"
#include "comm/communicator.h"

namespace kolo::comm::detail {

// Where a rank's block for one step is: written at the start of its slot half for that step.
struct PeerBlock {
  uint64_t pid;
  uint64_t address;
  uint64_t bytes;
};

// Blocks at least this large move in one copy (below, the second flag round costs more than
// the copy it saves).
constexpr size_t kSingleCopyMinBytes = size_t{32} * 1024;

// Whether every member of the arena reads and writes its peers' memory (collective on first use:
// every member must call it at the same point of the same collective; later calls read the answer).
bool single_copy_usable(Communicator& comm, CollectiveArena& collective);

// Whether an allreduce or broadcast of `bytes` reads peers' memory because the host has more
// ranks than CPUs (allreduce_single_copy, broadcast_single_copy): from 1 MiB, when the group is
// exactly the host's ranks and every member can read its peers (collective on first use, as
// single_copy_usable). The arena's step-per-slot algorithms stop at small sizes there (one rank is
// always descheduled at each step's barrier), and the links' ring and chain copy every byte into
// a link's buffer and out again per hop.
bool oversubscribed_single_copy(Communicator& comm, size_t bytes);

// Publishes this rank's block for the step whose slot half is `half`, at byte `at` of the slot
// (alltoallv publishes one per destination).
void publish_block(CollectiveArena& collective, int half, size_t at, const void* address,
                   size_t bytes);

// Reads the block `peer` (an arena slot) published at byte `at` of its slot half `half` into
// `into`, which holds `bytes`; throws naming the peer when it cannot (it died meanwhile, or the
// block's size is not what the collective expects).
void read_block(Communicator& comm, CollectiveArena& collective, int peer, int half, size_t at,
                std::byte* into, size_t bytes);

// Reads `bytes` from byte `offset` of the block `peer` published at byte `at` of its slot half
// `half` (a slice of it; read_block reads it whole); throws as read_block, and naming the range
// when the block is shorter than the slice.
void read_block_range(Communicator& comm, CollectiveArena& collective, int peer, int half,
                      size_t at, size_t offset, std::byte* into, size_t bytes);

// Writes `bytes` from `from` at byte `offset` of the block `peer` published (a slice of its
// output); throws as read_block_range.
void write_block_range(Communicator& comm, CollectiveArena& collective, int peer, int half,
                       size_t at, size_t offset, const std::byte* from, size_t bytes);

// Posts that this rank has read this step's blocks and waits until every member has: then no
// peer reads this rank's block any more. `meanwhile` (if any) runs between the post and the wait:
// a rank's copy of its own block, which no peer waits for.
void finish_step_reads(Communicator& comm, CollectiveArena& collective, uint64_t step,
                       const std::function<void()>& meanwhile = {});

// The barrier of step `step` (as finish_step_writes) taken one member at a time: posts `ready`,
// then for each other member from the next rank on waits for that member alone and calls
// take(member) once it has posted. `meanwhile` runs (at most once) the first time a member is
// still behind: this rank's own copy instead of a wait (with more ranks than CPUs the rank that
// arrives last finds every block ready and reads at once).
void take_as_posted(Communicator& comm, CollectiveArena& collective, uint64_t step,
                    const std::function<void()>& meanwhile, const std::function<void(int)>& take);

}  // namespace kolo::comm::detail
