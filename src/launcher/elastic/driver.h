// kolorun in elastic mode (--min-np / --max-np / --host-discovery-script): owns the job's
// membership. It starts workers on the slots of the host pool (fixed -H/hostfile hosts, or what
// the discovery script prints), publishes membership rounds in the rendezvous store, replaces
// lost workers, blacklists failing hosts, and prints one line per membership change. The
// protocol with the workers' init() is docs/elastic_protocol.md.
#pragma once

#include "base/logger.h"
#include "launcher/cli/cli.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

// Returns kolorun's exit code: 0 when every worker of the last round exited 0.
int run_elastic_job(const LaunchOptions& options, const Environment& inherited,
                    const Logger& logger);

}  // namespace kolo::launcher
