// Internal to comm/: waiting for the other members of the host arena to post a flag. Spins
// briefly (a peer on another core posts within a microsecond or so), yields the CPU for a while,
// then sleeps on the arena's futex in short naps; between naps it checks the links of the ranks
// still behind (a killed rank's socket reports a hang-up at once) and the peer timeout, so a
// dead or stuck rank becomes a PeerError naming it instead of a hang.
#pragma once

#include <cstdint>

#include "comm/collective_arena.h"
#include "comm/communicator.h"

namespace kolo::comm::detail {

// Returns once every member other than this rank posted `which` >= target.
void wait_for_members(Communicator& comm, CollectiveArena& arena,
                      transport::SharedArena::Flag which, uint64_t target);

}  // namespace kolo::comm::detail
