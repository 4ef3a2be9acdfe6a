// One kolorun job from parsed options to exit code: the launch plan, the job secret, the
// rendezvous server, the ranks' environments, spawning, and supervision.
#pragma once

#include "base/logger.h"
#include "launcher/cli.h"
#include "launcher/env.h"

namespace kolo::launcher {

// Returns kolorun's exit code. Throws kolo::Error for problems found before any rank starts
// (bad host list, remote host, rendezvous server failure).
int run_job(const LaunchOptions& options, const Environment& inherited, const Logger& logger);

}  // namespace kolo::launcher
