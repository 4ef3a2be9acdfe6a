// The hosts an elastic job may place workers on: the fixed -H/hostfile/Slurm/Volcano list, or
// what the --host-discovery-script prints (asked again every
// LaunchOptions::discovery_interval_seconds), and the blacklist of hosts whose workers failed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/logger.h"
#include "launcher/cli/cli.h"
#include "launcher/elastic/blacklist.h"
#include "launcher/hosts/hosts.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

class ElasticHostPool {
 public:
  // What one discovery answer changed.
  struct Change {
    std::vector<HostSlots> added;
    std::vector<std::string> removed;
  };

  // Reads the first pool; a discovery script whose first answer fails is a usage error (throws).
  ElasticHostPool(const LaunchOptions& options, const Environment& env);

  // Asks the discovery script again when it is due (never for a fixed pool). A failing answer
  // is logged and the last one kept. Returns what changed, or nothing when not asked.
  std::optional<Change> refresh(Clock::time_point now, const Logger& logger);

  [[nodiscard]] const std::vector<HostSlots>& hosts() const { return hosts_; }
  // Whether slot `slot` of `host` is still in the pool (a host may shrink).
  [[nodiscard]] bool has_slot(const std::string& host, int slot) const;
  // Every slot of the hosts not blacklisted at `now`.
  [[nodiscard]] int open_slots(Clock::time_point now) const;
  // Whether slots missing now may come back: a discovery script or a blacklist cooldown.
  [[nodiscard]] bool slots_can_come_back() const;
  // The pool as "host:slots", for messages.
  [[nodiscard]] std::vector<std::string> describe() const;

  Blacklist& blacklist() { return blacklist_; }
  [[nodiscard]] const Blacklist& blacklist() const { return blacklist_; }

 private:
  std::vector<HostSlots> discover() const;

  const LaunchOptions& options_;
  Blacklist blacklist_;
  std::vector<HostSlots> hosts_;
  std::optional<Clock::time_point> next_discovery_;
};

}  // namespace kolo::launcher
