// Setting up the host's collective arena at bootstrap, over the pair links (still TCP, already
// authenticated): the lowest rank of the host creates the arena and offers its name to the
// others, each maps it and answers, the creator unlinks the name and tells everyone whether all
// of them mapped it. Either the whole host uses the arena or none of it does.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/logger.h"
#include "transport/host_arena.h"
#include "transport/link.h"
#include "transport/shm/arena.h"

namespace kolo::transport::shm {

struct ArenaOptions {
  int rank = 0;
  uint64_t round = 0;
  std::string job_tag;
  // Per slot half; a multiple of 4096. Each step of an arena allreduce moves one chunk per rank:
  // 1 MiB measured best against 64 and 256 KiB (fewer barriers per byte; still in L2/L3).
  size_t chunk_bytes = 1 << 20;
  std::vector<bool> same_host;      // per rank: shares this rank's host
  Deadline deadline = Deadline::never();
};

// nullopt when this rank is alone on its host or the arena could not be set up (a warning says
// why; collectives then use the pair links). All ranks of the host must call it.
std::optional<HostArena> setup_host_arena(std::vector<std::unique_ptr<Link>>& links,
                                          const ArenaOptions& options, const Logger& logger);

}  // namespace kolo::transport::shm
