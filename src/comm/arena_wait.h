// Internal to comm/: waiting for the other members of the host arena to post a flag. Spins
// briefly (a peer on another core posts within a microsecond or so), yields the CPU for a while,
// then sleeps on the arena's futex in short naps; between naps it checks the links of the ranks
// still behind (a killed rank's socket reports a hang-up at once) and the peer timeout, so a
// dead or stuck rank becomes a PeerError naming it instead of a hang.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/collective_arena.h"
#include "comm/communicator.h"

namespace kolo::comm::detail {

// Returns once every member other than this rank (only >= 0: that member alone) posted `which`
// >= target.
void wait_for_members(Communicator& comm, CollectiveArena& arena,
                      transport::SharedArena::Flag which, uint64_t target, int only = -1);

// The arena of a collective that must go through it, or InvalidArgument naming `collective`
// when the group has none (Communicator::arena()).
CollectiveArena& required_arena(Communicator& comm, const char* collective);

// The step protocol of every arena collective. In step s a rank writes its data into its slot half
// s % 2 and then posts `ready` = s + 1; it posts that only once it finished reading every earlier
// step. So `ready` >= s from everyone means nobody still reads step s - 2, and the half is free:
// before_writing(s) waits for that (at once after a barrier step, which already saw it; a
// broadcast's receivers post without waiting, so the next writer may have to). A reader reads
// step s from a slot only after its owner posted s + 1.
void before_writing(Communicator& comm, CollectiveArena& arena, uint64_t step);
// The barrier step (allreduce's sliced steps add a second one, on `reduced`): after writing, posts
// `ready` = step + 1 and waits for everyone's; then every slot's half holds the step's data.
void finish_step_writes(Communicator& comm, CollectiveArena& arena, uint64_t step);

// Whether automatic choice sends a collective of `bytes` through the arena: the group must be
// exactly the host's ranks; with more ranks than CPUs only messages below `oversubscribed_limit`
// (every arena step is a barrier of all ranks and one of them is always descheduled, while the
// links' buffers let ranks run ahead).
bool arena_serves(const Communicator& comm, size_t bytes, size_t oversubscribed_limit);
// The oversubscribed limit of allgather and reducescatter (allreduce's is its
// small_message_bytes option, by default the same; broadcast's is 0).
inline constexpr size_t kOversubscribedArenaBytes = size_t{64} * 1024;

}  // namespace kolo::comm::detail
