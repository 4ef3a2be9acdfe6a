// Elastic: hosts whose workers failed get no new workers (Horovod's blacklist). Without a cooldown
// range a host stays out for the rest of the job; with --blacklist-cooldown-range MIN MAX it is
// whitelisted after a random delay in [MIN, MAX] seconds, drawn per failure (random, so hosts
// that failed together do not all come back in the same second). A whitelisted ("cooled down")
// host is usable again from the job's next membership change on: its cooldown ending is no reason
// to interrupt a training job that runs well without it (see docs/guide/elastic.md).
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

  // A failure of `host`. As Horovod's HostState.blacklist(): one during the host's cooldown
  // neither counts nor extends it (workers of one host that fail together are one failure).
  void add(const std::string& host, Clock::time_point now);
  [[nodiscard]] bool blocked(const std::string& host, Clock::time_point now) const;
  // Its cooldown ended and the job has not had a membership change since: it waits for one.
  [[nodiscard]] bool cooled_down(const std::string& host, Clock::time_point now) const;
  // The job changes membership anyway (a host came or went, a worker failed, a reset is under
  // way, or it is short of --min-np): every cooled-down host is an ordinary host again.
  void readmit(Clock::time_point now);
  // The hosts blocked now, sorted.
  [[nodiscard]] std::vector<std::string> blocked_hosts(Clock::time_point now) const;
  // Failures recorded for `host` so far (for messages).
  [[nodiscard]] int failures(const std::string& host) const;

 private:
  struct Entry {
    int failures = 0;
    std::optional<Clock::time_point> until;  // nullopt: for good
    bool readmitted = false;                 // readmit() after the cooldown ended
  };
  std::optional<std::pair<double, double>> cooldown_;
  std::mt19937 random_;
  std::map<std::string, Entry> entries_;
};

}  // namespace kolo::launcher
