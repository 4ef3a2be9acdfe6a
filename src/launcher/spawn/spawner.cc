#include "launcher/spawn/spawner.h"

#include "launcher/hosts/local_host.h"

namespace kolo::launcher {

SpawnerSelector::SpawnerSelector(std::string machine_hostname, std::unique_ptr<Spawner> local,
                                 std::unique_ptr<Spawner> remote)
    : machine_hostname_(std::move(machine_hostname)),
      local_(std::move(local)),
      remote_(std::move(remote)) {}

SpawnerSelector::~SpawnerSelector() = default;

bool SpawnerSelector::is_remote(const std::string& host) const {
  return !is_local_host(host, machine_hostname_);
}

Spawner& SpawnerSelector::for_host(const std::string& host) {
  return is_remote(host) ? *remote_ : *local_;
}

}  // namespace kolo::launcher
