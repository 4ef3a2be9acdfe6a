#include "launcher/spawn/local_spawner.h"

#include <fmt/format.h>

#include "launcher/spawn/process_spawn.h"

namespace kolo::launcher {

SpawnedProcess LocalSpawner::spawn(const SpawnRequest& request) {
  RankCpus cpus = placement_.for_rank(request.slot, request.env);
  Environment env = request.env;
  for (auto& [name, value] : cpus.additions) env[name] = std::move(value);
  return start_process(
      ProcessSpec{request.argv, std::move(env),
                  fmt::format("rank {} on host {}", request.slot.rank, request.slot.host), -1,
                  true},
      cpus.cpus);
}

}  // namespace kolo::launcher
