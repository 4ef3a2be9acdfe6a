// Elastic membership as pure functions, so the rules are testable without processes: which
// workers form a round and in what order, which free slots get new workers, and when too few
// slots for too long end the job.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "launcher/hosts/hosts.h"

namespace kolo::launcher {

// A worker process as the membership rules see it. `serial` grows with every worker kolorun
// starts, so it orders workers by age.
struct ElasticWorker {
  int serial = 0;
  std::string host;
  int slot = 0;  // index among the slots of its host
  // The stable id the worker carries in KOLO_WORKER_ID and the store keys: "host:slot#serial".
  [[nodiscard]] std::string id() const;
  bool operator==(const ElasticWorker&) const = default;
};

// The members of a new round in rank order: oldest first, so survivors keep their relative order
// and rank 0 is the oldest surviving worker (its state is the one broadcast); new workers last.
std::vector<ElasticWorker> round_order(std::vector<ElasticWorker> members);

// The store writes that publish round `round` with `members` (already in rank order): every
// assignment "<rank> <size>", the member list, and last the round number itself, so a worker
// that sees the round can read its assignment.
std::vector<std::pair<std::string, std::string>> round_publication(
    int64_t round, const std::vector<ElasticWorker>& members);

// Free slots to start up to `wanted` new workers on, in host order then slot order: slots of
// `pool` hosts not `blocked` and not taken by a worker in `running`.
std::vector<std::pair<std::string, int>> slots_to_fill(
    const std::vector<HostSlots>& pool, const std::function<bool(const std::string&)>& blocked,
    const std::vector<ElasticWorker>& running, int wanted);

// How many workers to aim for: every usable slot (running workers included), capped by `cap`
// (--max-np, or -np for a fixed pool without it; 0: no cap).
int elastic_target(int usable_slots, int max_np);

// The --min-np rule: the job fails when fewer than `min_np` workers were available for longer
// than `timeout` (the clock starts when the count first drops below and resets once it is back).
class MinSizeWatch {
 public:
  enum class Verdict { enough, waiting, expired };
  MinSizeWatch(int min_np, Duration timeout) : min_np_(min_np), timeout_(timeout) {}
  Verdict update(int available, Clock::time_point now);
  // When the count dropped below min_np (while it is below).
  [[nodiscard]] std::optional<Clock::time_point> short_since() const { return short_since_; }

 private:
  int min_np_;
  Duration timeout_;
  std::optional<Clock::time_point> short_since_;
};

// What the end-of-job rules look at, counted by the driver on every pass.
struct ElasticCensus {
  int available = 0;                 // running workers whose host is still in the pool
  int usable_slots = 0;              // those plus the free slots of hosts not blacklisted
  bool slots_can_come_back = false;  // a discovery script or a blacklist cooldown may add slots
  int resets = 0;                    // rounds published after the first
  MinSizeWatch::Verdict min_size = MinSizeWatch::Verdict::enough;
  std::vector<std::string> hosts;        // the pool, as "host:slots"
  std::vector<std::string> blacklisted;  // hosts blacklisted now
};

struct ElasticLimits {
  int min_np = 1;
  double elastic_timeout_seconds = 600;
  std::optional<int> reset_limit;
};

// Why the job must end now (the line kolorun prints), or nothing: fewer than --min-np workers for
// longer than --elastic-timeout; fewer than --min-np with no slot able to come back (waiting would
// only hang); more resets than --reset-limit.
std::optional<std::string> elastic_end_reason(const ElasticCensus& census,
                                              const ElasticLimits& limits);

}  // namespace kolo::launcher
