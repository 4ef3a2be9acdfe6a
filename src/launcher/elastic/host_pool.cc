#include "launcher/elastic/host_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/errors.h"
#include "launcher/elastic/discovery.h"
#include "launcher/hosts/host_sources.h"
#include "launcher/hosts/local_host.h"

namespace kolo::launcher {

namespace {

// The discovery script must answer within this.
constexpr auto kDiscoveryTimeout = std::chrono::seconds(10);

// The pool of a job without a discovery script: -H, --hostfile, Slurm or Volcano, as a fixed
// job would use them, with room for --max-np workers.
std::vector<HostSlots> fixed_elastic_pool(const LaunchOptions& options, const Environment& env) {
  const HostSourceOptions sources{options.hosts,
                                  options.hostfile,
                                  options.hostfile_format,
                                  options.slots_per_host,
                                  std::max(options.num_proc, options.max_np),
                                  HostSourceOptions::kDefaultVolcanoPath,
                                  machine_hostname()};
  return hosts_for_launch(sources, lookup_in(env)).hosts;
}

}  // namespace

ElasticHostPool::ElasticHostPool(const LaunchOptions& options, const Environment& env)
    : options_(options), blacklist_(options.blacklist_cooldown) {
  hosts_ = options.discovery_script ? discover() : fixed_elastic_pool(options, env);
}

std::vector<HostSlots> ElasticHostPool::discover() const {
  const std::string text = run_discovery_script(*options_.discovery_script, kDiscoveryTimeout);
  return parse_discovery_output(text, options_.slots_per_host.value_or(1));
}

std::optional<ElasticHostPool::Change> ElasticHostPool::refresh(Clock::time_point now,
                                                                const Logger& logger) {
  if (!options_.discovery_script) return std::nullopt;
  if (next_discovery_ && now < *next_discovery_) return std::nullopt;
  next_discovery_ = now + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(options_.discovery_interval_seconds));
  std::vector<HostSlots> found;
  try {
    found = discover();
  } catch (const Error& error) {
    logger.warn("host discovery failed (keeping the last answer): {}", error.what());
    return std::nullopt;
  }
  std::map<std::string, int> before;
  for (const auto& host : hosts_) before[host.host] = host.slots;
  std::map<std::string, int> after;
  for (const auto& host : found) after[host.host] = host.slots;
  Change change;
  for (const auto& [host, slots] : after) {
    if (!before.contains(host)) change.added.push_back({host, slots});
  }
  for (const auto& [host, slots] : before) {
    if (!after.contains(host)) change.removed.push_back(host);
  }
  hosts_ = std::move(found);
  return change;
}

bool ElasticHostPool::has_slot(const std::string& host, int slot) const {
  return std::any_of(hosts_.begin(), hosts_.end(),
                     [&](const HostSlots& h) { return h.host == host && slot < h.slots; });
}

int ElasticHostPool::open_slots(Clock::time_point now) const {
  int slots = 0;
  for (const auto& host : hosts_) {
    if (!blacklist_.blocked(host.host, now)) slots += host.slots;
  }
  return slots;
}

bool ElasticHostPool::slots_can_come_back() const {
  return options_.discovery_script.has_value() || options_.blacklist_cooldown.has_value();
}

std::vector<std::string> ElasticHostPool::describe() const {
  std::vector<std::string> names;
  names.reserve(hosts_.size());
  for (const auto& host : hosts_) names.push_back(fmt::format("{}:{}", host.host, host.slots));
  return names;
}

}  // namespace kolo::launcher
