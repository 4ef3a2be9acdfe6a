// Every registered process set, whether this rank is a member or not: id -> ranks (ascending
// world ranks). Sets are added and removed only as agreed responses, in the same cycle on every
// rank, so the ids handed out here are the same everywhere. Thread-safe: enqueue() and the
// hvd.process_set_* queries read it on callers' threads while the background loop applies adds
// and removes. (The sets this rank belongs to, with their controllers and executors, are the
// session's ProcessSet objects.)
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace kolo::core {

class ProcessSetRegistry {
 public:
  // Registers the global set (id 0) with every rank of the world.
  explicit ProcessSetRegistry(int world_size);

  // Registers a set of `ranks` (ascending) and returns its id: the longest-freed id of a removed
  // set if any, else the next new one (Horovod's order, which its tests check). Throws
  // InvalidArgument naming the existing id when a set with the same ranks is registered.
  int32_t add(const std::vector<int>& ranks);
  // Drops set `id`; false for the global set or an id not registered.
  bool remove(int32_t id);

  // The ranks of set `id`, or nullopt when it is not registered.
  [[nodiscard]] std::optional<std::vector<int>> find(int32_t id) const;
  // The ranks of set `id`; throws InvalidArgument for an id not registered.
  [[nodiscard]] std::vector<int> ranks(int32_t id) const;
  [[nodiscard]] std::vector<int32_t> ids() const;

 private:
  mutable std::mutex mutex_;
  std::map<int32_t, std::vector<int>> ranks_;
  int32_t next_id_ = 1;           // advances identically on every rank (agreed responses only)
  std::deque<int32_t> free_ids_;  // removed sets' ids, oldest first, handed out again
};

}  // namespace kolo::core
