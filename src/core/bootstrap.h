// Turning launch information into a connected world: rendezvous (publish this rank's host identity
// and listening endpoint, read everyone else's), then the authenticated TCP mesh.
#pragma once

#include <memory>
#include <vector>

#include "base/logger.h"
#include "core/config.h"
#include "core/world.h"
#include "rendezvous/store.h"
#include "transport/link.h"

namespace kolo::core {

struct Connected {
  WorldInfo world;
  std::vector<std::unique_ptr<transport::Link>> links;  // indexed by rank; null for self
  std::unique_ptr<rendezvous::Store> store;  // the job's store; null when running alone
};

// `round` distinguishes successive init() calls in one job (keys and hellos carry it).
Connected bootstrap(const LaunchInfo& launch, const Config& config, uint64_t round,
                    const Logger& logger);

}  // namespace kolo::core
