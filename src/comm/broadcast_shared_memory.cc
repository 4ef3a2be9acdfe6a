// Broadcast for the ranks of one host through the host's shared-memory arena: in step k the root
// copies the k-th slot-sized piece of its buffer into its slot half k % 2 and posts `ready`; every
// other rank posts its own `ready` at once (it writes nothing), waits for the root's alone and
// copies the piece out. No barrier: the root may run a step ahead of the slowest receiver (it
// waits only until every receiver entered the step before, detail::before_writing), so back to
// back broadcasts overlap as they do in the links' buffers. Each byte is copied twice whatever
// the group size, where the tree over links copies it twice per level.
#include <algorithm>
#include <cstring>

#include "comm/arena_wait.h"
#include "comm/collective_arena.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"

namespace kolo::comm {

void broadcast_shared_memory(Communicator& comm, Bytes data, int root) {
  detail::check_root(comm, "broadcast_shared_memory", root);
  CollectiveArena& collective = detail::required_arena(comm, "broadcast_shared_memory");
  if (comm.size() == 1) return;
  transport::SharedArena& arena = *collective.host.arena;
  const int self = collective.host.slot;
  const size_t chunk = arena.chunk_bytes();
  for (size_t done = 0; done < data.size(); done += chunk) {
    const size_t bytes = std::min(chunk, data.size() - done);
    const uint64_t step = collective.steps++;
    const int half = static_cast<int>(step % 2);
    if (self == root) {
      detail::before_writing(comm, collective, step);
      std::memcpy(arena.slot(root, half), data.data() + done, bytes);
      arena.post(self, transport::SharedArena::Flag::ready, step + 1);
    } else {
      arena.post(self, transport::SharedArena::Flag::ready, step + 1);
      detail::wait_for_members(comm, collective, transport::SharedArena::Flag::ready, step + 1,
                               root);
      std::memcpy(data.data() + done, arena.slot(root, half), bytes);
    }
  }
}

}  // namespace kolo::comm
