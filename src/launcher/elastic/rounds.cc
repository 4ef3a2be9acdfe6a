#include "launcher/elastic/rounds.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "launcher/spawn/rank_environment.h"
#include "rendezvous/elastic_keys.h"
#include "rendezvous/elastic_seat.h"

namespace kolo::launcher {

std::string ElasticWorker::id() const { return fmt::format("{}:{}#{}", host, slot, serial); }

std::vector<ElasticWorker> round_order(std::vector<ElasticWorker> members) {
  std::sort(members.begin(), members.end(),
            [](const ElasticWorker& a, const ElasticWorker& b) { return a.serial < b.serial; });
  return members;
}

std::vector<std::pair<std::string, std::string>> round_publication(
    int64_t round, const std::vector<ElasticWorker>& members) {
  std::vector<std::pair<std::string, std::string>> writes;
  std::string list;
  const int size = static_cast<int>(members.size());
  for (int rank = 0; rank < size; ++rank) {
    const std::string id = members[static_cast<size_t>(rank)].id();
    writes.emplace_back(rendezvous::elastic_assign_key(round, id),
                        rendezvous::encode_elastic_seat({rank, size}));
    list += id + "\n";
  }
  writes.emplace_back(rendezvous::elastic_members_key(round), list);
  writes.emplace_back(std::string(rendezvous::kElasticRoundKey), std::to_string(round));
  return writes;
}

std::vector<std::pair<std::string, int>> slots_to_fill(
    const std::vector<HostSlots>& pool, const std::function<bool(const std::string&)>& blocked,
    const std::vector<ElasticWorker>& running, int wanted) {
  std::set<std::pair<std::string, int>> taken;
  for (const auto& worker : running) taken.emplace(worker.host, worker.slot);
  std::vector<std::pair<std::string, int>> free;
  for (const auto& host : pool) {
    if (blocked(host.host)) continue;
    for (int slot = 0; slot < host.slots; ++slot) {
      if (static_cast<int>(free.size()) >= wanted) return free;
      if (!taken.contains({host.host, slot})) free.emplace_back(host.host, slot);
    }
  }
  return free;
}

int elastic_target(int usable_slots, int max_np) {
  return max_np > 0 ? std::min(usable_slots, max_np) : usable_slots;
}

MinSizeWatch::Verdict MinSizeWatch::update(int available, Clock::time_point now) {
  if (available >= min_np_) {
    short_since_.reset();
    return Verdict::enough;
  }
  if (!short_since_) short_since_ = now;
  return now - *short_since_ >= timeout_ ? Verdict::expired : Verdict::waiting;
}

std::optional<std::string> elastic_end_reason(const ElasticCensus& census,
                                              const ElasticLimits& limits) {
  if (census.min_size == MinSizeWatch::Verdict::expired) {
    return fmt::format(
        "only {} worker(s) available (hosts: {}; blacklisted: {}), fewer than --min-np {} for "
        "longer than --elastic-timeout {} s; ending the job",
        census.available, fmt::join(census.hosts, ","), fmt::join(census.blacklisted, ","),
        limits.min_np, format_seconds(limits.elastic_timeout_seconds));
  }
  if (census.available < limits.min_np && !census.slots_can_come_back &&
      census.usable_slots < limits.min_np) {
    return fmt::format(
        "only {} worker(s) left and no slot can come back (hosts {}; blacklisted after failures: "
        "{}; no discovery script or --blacklist-cooldown-range), fewer than --min-np {}; ending "
        "the job",
        census.available, fmt::join(census.hosts, ","), fmt::join(census.blacklisted, ","),
        limits.min_np);
  }
  if (limits.reset_limit && census.resets > *limits.reset_limit) {
    return fmt::format("{} resets exceed --reset-limit {}; ending the job", census.resets,
                       *limits.reset_limit);
  }
  return std::nullopt;
}

}  // namespace kolo::launcher
