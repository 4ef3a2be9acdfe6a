#include "launcher/spawner.h"

#include <fmt/format.h>

#include "base/errors.h"
#include "launcher/local_host.h"
#include "launcher/local_spawner.h"

namespace kolo::launcher {

SpawnerSelector::SpawnerSelector(std::string machine_hostname, RemoteOptions remote)
    : machine_hostname_(std::move(machine_hostname)),
      remote_(std::move(remote)),
      local_(std::make_unique<LocalSpawner>()) {}

SpawnerSelector::~SpawnerSelector() = default;

void SpawnerSelector::check_hosts(const std::vector<SlotAssignment>& plan) const {
  for (const auto& host : hosts_in_plan(plan)) {
    if (!is_local_host(host, machine_hostname_)) {
      throw InvalidArgument(fmt::format(
          "host '{}' is not this machine and ssh launching arrives in a later version: this "
          "kolorun starts ranks only on localhost, 127.0.0.1 or '{}'",
          host, machine_hostname_));
    }
  }
}

Spawner& SpawnerSelector::for_host(const std::string& host) {
  SlotAssignment slot;
  slot.host = host;
  check_hosts({slot});
  return *local_;
}

}  // namespace kolo::launcher
