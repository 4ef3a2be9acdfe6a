// Broadcast for the ranks of one host through the host's shared-memory arena: in step k the root
// copies the k-th slot-sized piece of its buffer into its slot half k % 2, and after one barrier
// (detail::finish_step_writes; the others post at once, having nothing to write) every other rank
// copies it out. Each byte is copied twice whatever the group size, where the tree over links
// copies it twice per level.
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
  const bool is_root = collective.host.slot == root;
  const size_t chunk = arena.chunk_bytes();
  for (size_t done = 0; done < data.size(); done += chunk) {
    const size_t bytes = std::min(chunk, data.size() - done);
    const uint64_t step = collective.steps++;
    const int half = static_cast<int>(step % 2);
    if (is_root) std::memcpy(arena.slot(root, half), data.data() + done, bytes);
    detail::finish_step_writes(comm, collective, step);
    if (!is_root) std::memcpy(data.data() + done, arena.slot(root, half), bytes);
  }
}

}  // namespace kolo::comm
