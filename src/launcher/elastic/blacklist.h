// Elastic: hosts whose workers failed get no new workers (Horovod's blacklist). Without a cooldown
// range a host stays out for the rest of the job; with --blacklist-cooldown-range MIN MAX it is
// re-admitted after a random delay in [MIN, MAX] seconds, drawn per failure (random, so hosts
// that failed together do not all come back in the same second). Workers already running on a
// blacklisted host keep running: they are healthy, only the slot that failed is suspect.
#pragma once

#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"

namespace kolo::launcher {

class Blacklist {
 public:
  // `cooldown`: seconds MIN, MAX; nullopt: for good.
  explicit Blacklist(std::optional<std::pair<double, double>> cooldown, uint32_t seed = 0);

  void add(const std::string& host, Clock::time_point now);
  [[nodiscard]] bool blocked(const std::string& host, Clock::time_point now) const;
  // The hosts blocked now, sorted.
  [[nodiscard]] std::vector<std::string> blocked_hosts(Clock::time_point now) const;
  // Failures recorded for `host` so far (for messages).
  [[nodiscard]] int failures(const std::string& host) const;

 private:
  struct Entry {
    int failures = 0;
    std::optional<Clock::time_point> until;  // nullopt: for good
  };
  std::optional<std::pair<double, double>> cooldown_;
  std::mt19937 random_;
  std::map<std::string, Entry> entries_;
};

}  // namespace kolo::launcher
