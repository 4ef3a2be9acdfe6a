// Turning launch information into a connected world: rendezvous (publish this rank's host identity
// and listening endpoint, read everyone else's), then the authenticated TCP mesh, the host's
// shared-memory arena and the same-host links moved onto shared memory. The one place outside
// transport/ that knows which transports exist; what it returns is seen through the two seams
// (transport/link.h, transport/host_arena.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/logger.h"
#include "bootstrap/launch_info.h"
#include "bootstrap/world.h"
#include "rendezvous/store.h"
#include "transport/link.h"

namespace kolo::bootstrap {

// What bootstrap needs of the job's settings; core fills it from its Config.
struct Options {
  std::chrono::milliseconds start_timeout{30000};
  // KOLO_IFACE / HOROVOD_GLOO_IFACE: the interfaces whose addresses this rank publishes (empty:
  // every up interface, the route toward the rendezvous first).
  std::vector<std::string> network_interfaces;
  bool shm_disable = false;                   // same-host peers stay on TCP
  uint64_t shm_ring_bytes = 1ull << 20;       // per direction of a same-host link
  uint64_t shm_allreduce_bytes = 1ull << 40;  // 0: no host arena is set up
  // This rank may read peers' memory (single_copy.h): nullopt, from the size the probe measures;
  // true, from 32 KiB; false, never.
  std::optional<bool> shm_single_copy;
  uint64_t shm_fold_whole_bytes = 0;  // arena allreduce steps folded whole (0: auto)
  // The negotiation protocol this rank speaks (core: negotiation::kWireVersion). Every rank
  // publishes it and checks each peer's, so a rank of another kolo build fails here naming both.
  uint32_t protocol_version = 0;
};

struct Connected {
  WorldInfo world;
  std::vector<std::unique_ptr<transport::Link>> links;  // indexed by rank; null for self
  std::unique_ptr<rendezvous::Store> store;             // the job's store; null when running alone
};

// `round` distinguishes successive init() calls in one job (keys and hellos carry it).
Connected connect_world(const LaunchInfo& launch, const Options& options, uint64_t round,
                        const Logger& logger);

}  // namespace kolo::bootstrap
