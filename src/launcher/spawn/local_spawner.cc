#include "launcher/spawn/local_spawner.h"

#include <fmt/format.h>

#include "launcher/spawn/process_spawn.h"

namespace kolo::launcher {

SpawnedProcess LocalSpawner::spawn(const SpawnRequest& request) {
  return start_process(ProcessSpec{
      request.argv, request.env,
      fmt::format("rank {} on host {}", request.slot.rank, request.slot.host), -1, true});
}

}  // namespace kolo::launcher
