// horovodrun's elastic flags (--min-np, --max-np, --host-discovery-script, --elastic-timeout,
// --reset-limit, --blacklist-cooldown-range): their CLI11 declarations and their checks, apart
// from the rest of kolorun's command line (cli.cc) because they form one mode of their own.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "launcher/cli/cli.h"

namespace kolo::launcher {

// The elastic flags as CLI11 stores them.
struct ElasticFlags {
  std::optional<int> min_np;
  std::optional<int> max_np;
  std::optional<std::string> discovery_script;
  std::optional<double> elastic_timeout;
  std::optional<int> reset_limit;
  std::vector<double> cooldown_range;
};

void add_elastic_flags(CLI::App& app, ElasticFlags& flags);

// Any of --min-np / --max-np / --host-discovery-script turns elastic mode on (as horovodrun); the
// others only shape it. Fills `options`' elastic fields (after -np, -H/--hostfile and --mpi are
// in it); throws InvalidArgument naming the flags that do not fit together.
void finish_elastic(const ElasticFlags& flags, const EnvLookup& env, LaunchOptions& options);

}  // namespace kolo::launcher
