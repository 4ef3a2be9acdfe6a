// What an elastic job runs on besides its workers, started once before the first worker: the
// spawners (local, or ssh to the agent on a remote host), the rendezvous server with a client of
// its store (membership rounds are published there), and the output multiplexer.
#pragma once

#include <memory>
#include <vector>

#include "base/logger.h"
#include "launcher/cli/cli.h"
#include "launcher/hosts/hosts.h"
#include "launcher/spawn/rank_environment.h"
#include "launcher/spawn/spawner.h"
#include "launcher/supervise/output.h"
#include "rendezvous/tcp_store.h"

namespace kolo::launcher {

struct ElasticJobServices {
  JobSettings job;
  std::unique_ptr<SpawnerSelector> spawners;
  std::unique_ptr<rendezvous::TcpStoreServer> server;
  std::unique_ptr<rendezvous::TcpStore> store;  // destroyed before the server it talks to
  std::unique_ptr<OutputMultiplexer> output;
};

// Starts the services for a job whose first pool is `pool`. The rendezvous server listens where
// the pool's remote hosts (or, with a discovery script and --network-interface, later ones) can
// reach it.
ElasticJobServices start_elastic_job_services(const LaunchOptions& options,
                                              const std::vector<HostSlots>& pool,
                                              const Logger& logger);

}  // namespace kolo::launcher
