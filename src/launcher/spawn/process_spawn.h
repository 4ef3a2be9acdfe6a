// posix_spawn for every process the launcher starts (local ranks, ssh clients, the remote agent's
// rank): safe while other threads run, a missing executable reported as an error instead of a
// child that exits, and always a process group of its own so a signal reaches its children too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/spawn/rank_environment.h"
#include "launcher/spawn/spawner.h"

namespace kolo::launcher {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in the launcher's own PATH
  Environment env;
  std::string who;          // "rank 3 on host a", for error messages
  int stdin_fd = -1;        // -1: /dev/null
  bool pipe_output = true;  // stdout/stderr into fresh pipes; false: share the caller's 1 and 2
};

// The child gets: its own process group, the stdin chosen, no other inherited descriptors, an
// empty signal mask and default SIGPIPE/SIGCHLD handling (the launcher blocks and ignores
// signals the child must see normally) and, given `cpus`, only those CPUs (local_placement.h;
// nullopt: the launcher's own). Throws SystemError (errno ENOENT when not found).
SpawnedProcess start_process(const ProcessSpec& spec,
                             const std::optional<std::vector<int>>& cpus = std::nullopt);

}  // namespace kolo::launcher
