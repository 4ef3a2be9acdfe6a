// One kolorun job from parsed options to exit code: the launch plan, the job secret, the
// rendezvous server, the ranks' environments, spawning, and supervision.
#pragma once

#include <cstdint>
#include <string>

#include "base/logger.h"
#include "launcher/cli/cli.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

// What every rank of the job shares (spawn/rank_environment.h), from the options and the rendezvous
// server's address, port and secret. Also used by elastic mode (elastic/driver.h).
JobSettings job_settings(const LaunchOptions& options, const std::string& address, uint16_t port,
                         const std::string& secret_hex);

// Returns kolorun's exit code. Throws kolo::Error for problems found before any rank starts
// (bad host list, remote host, rendezvous server failure).
int run_job(const LaunchOptions& options, const Environment& inherited, const Logger& logger);

}  // namespace kolo::launcher
