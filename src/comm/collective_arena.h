// The host's shared-memory collective arena as the communicators of one process see it: shared
// (std::shared_ptr in Topology) by the world communicator and the subgroups made from it, since
// they all run their steps on the same flags. A communicator uses it only when its ranks are
// exactly the arena's members in slot order (every rank of the host, see
// Communicator::arena()), so every member runs the same steps in the same order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/spin_budget.h"
#include "transport/host_arena.h"

namespace kolo::comm {

struct CollectiveArena {
  explicit CollectiveArena(transport::HostArena host_arena, size_t limit)
      : host(std::move(host_arena)), max_bytes(limit) {}

  transport::HostArena host;
  // Automatic choice sends allreduce, allgather, broadcast, reducescatter and alltoall through
  // the arena up to this many bytes (KOLO_SHM_ALLREDUCE_BYTES; the whole buffer, as the size
  // columns of kolo-bench; 0: never).
  size_t max_bytes;
  uint64_t steps = 0;   // steps this process ran on the arena: the same on every member
  uint64_t synced = 0;  // every member posted `ready` >= this, as this rank last saw
  SpinBudget spin;      // how long this process's waits on the members' flags spin
  // Single-copy reads of peers' memory (comm/single_copy.h): whether this rank may
  // (KOLO_SHM_SINGLE_COPY), and whether every member can, once probed together.
  bool single_copy_allowed = true;
  // Whether the probe also times a read against the arena's two copies to choose the block size
  // from which allgather and alltoall read (KOLO_SHM_SINGLE_COPY=auto, the default; 1: from
  // detail::kSingleCopyMinBytes without timing), and its verdict: whether reads cost no more
  // than the copies they save (detail::single_copy_blocks_from derives the block size from it).
  bool single_copy_measured = true;
  bool single_copy_reads_pay = false;
  // Allreduce steps up to this many bytes are folded whole by every rank
  // (KOLO_SHM_FOLD_WHOLE_BYTES; 0: detail::folds_whole decides).
  size_t fold_whole_bytes = 0;
  enum class SingleCopy { unknown, usable, unusable } single_copy = SingleCopy::unknown;
};

}  // namespace kolo::comm
