// The environment each rank starts with: kolorun's own environment, plus what every rank of the
// job shares (rendezvous address, secret, timeouts, tuning flags), plus the rank's own place in
// the plan, under kolo's names and Horovod's (so scripts that read HOROVOD_RANK keep working).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/env.h"
#include "launcher/hosts/hosts.h"

namespace kolo::launcher {

using Environment = std::map<std::string, std::string>;

// The launcher's own environment (environ) as a map. Lookups into it or into the process
// environment, and the settings' names, are base/env.h's.
Environment current_environment();

// What every rank of one job shares.
struct JobSettings {
  std::string rendezvous_addr;
  uint16_t rendezvous_port = 0;
  std::string secret_hex;
  double start_timeout_seconds = 30;
  std::optional<std::string> log_level;  // canonical name, e.g. "DEBUG"
  // Variables from tuning flags (tuning_flags.h), already in their final form.
  std::vector<std::pair<std::string, std::string>> extra;
};

// The full environment of the rank at `slot`. Launch variables always override inherited ones (a
// kolorun started from inside another job must not leak the outer job's rank); PYTHONUNBUFFERED is
// only set when absent, so the user can still choose buffering.
Environment build_rank_environment(const Environment& inherited, const JobSettings& job,
                                   const SlotAssignment& slot);

// "NAME=value" strings for execve, in the map's (sorted) order.
std::vector<std::string> to_envp_strings(const Environment& environment);

// Seconds as the shortest decimal text ("30", "0.5"), the form the ranks' config parser reads.
std::string format_seconds(double seconds);

}  // namespace kolo::launcher
