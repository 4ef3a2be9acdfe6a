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
#include <span>

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
// Where a read of a peer's memory costs more than the arena's two copies (the kernel pins every
// page it reads; on this project's AMD EPYC VM a 256 KiB read took 4x one memcpy of it), allgather
// and alltoall read blocks in one copy only from this size on, where memory bandwidth rather
// than the cost per page decides and moving each byte once wins (np 2 there: allgather of 2 MiB
// blocks through the arena 1.2x faster than read, of 4 MiB blocks 1.17x slower).
constexpr size_t kSingleCopyDramBytes = size_t{4} << 20;
// The probe's timed block: past the caches' first level, below the L2 where glibc's memcpy
// changes method.
constexpr size_t kSingleCopyTimedBytes = size_t{256} << 10;

// Whether every member of the arena reads and writes its peers' memory (collective on first use:
// every member must call it at the same point of the same collective; later calls read the answer).
// Where the members measure (CollectiveArena::single_copy_measured), each also times reading its
// successor's kSingleCopyTimedBytes against copying them twice, and every member sets
// CollectiveArena::single_copy_reads_pay from everyone's figures alike (single_copy_pays).
bool single_copy_usable(Communicator& comm, CollectiveArena& collective);

// Whether reads of peers' memory pay in allgather and alltoall, from every member's best times
// (nanoseconds) of one read and of the two copies it saves: the sums compared, reads winning
// ties (members that did not measure report 0 for both).
bool single_copy_pays(std::span<const uint64_t> read_ns, std::span<const uint64_t> copies_ns);

// The block size from which allgather and alltoall read peers' memory: single_copy_usable first
// (collective on first use), then what its probe chose (SIZE_MAX: never).
size_t single_copy_blocks_from(Communicator& comm, CollectiveArena& collective);

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
