#include "launcher/elastic/blacklist.h"

#include <algorithm>
#include <cmath>

namespace kolo::launcher {

Blacklist::Blacklist(std::optional<std::pair<double, double>> cooldown, uint32_t seed)
    : cooldown_(cooldown), random_(seed == 0 ? std::random_device{}() : seed) {}

void Blacklist::add(const std::string& host, Clock::time_point now) {
  Entry& entry = entries_[host];
  if (cooldown_ && entry.until && now < *entry.until) return;
  ++entry.failures;
  entry.readmitted = false;
  if (!cooldown_) {
    entry.until.reset();
    return;
  }
  // Horovod's backoff (horovod/runner/elastic/discovery.py): MIN * 2^failures plus up to MIN of
  // jitter, kept within MIN..MAX, so a host that keeps failing stays out longer.
  const auto [low, high] = *cooldown_;
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  const double backoff =
      low * std::ldexp(1.0, std::min(entry.failures, 30)) + jitter(random_) * low;
  const double delay = std::clamp(backoff, low, high);
  entry.until = now + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(delay));
}

bool Blacklist::blocked(const std::string& host, Clock::time_point now) const {
  const auto found = entries_.find(host);
  if (found == entries_.end()) return false;
  return !found->second.until || now < *found->second.until;
}

bool Blacklist::cooled_down(const std::string& host, Clock::time_point now) const {
  const auto found = entries_.find(host);
  if (found == entries_.end()) return false;
  const Entry& entry = found->second;
  return entry.until && now >= *entry.until && !entry.readmitted;
}

void Blacklist::readmit(Clock::time_point now) {
  for (auto& [host, entry] : entries_) {
    if (cooled_down(host, now)) entry.readmitted = true;
  }
}

std::vector<std::string> Blacklist::blocked_hosts(Clock::time_point now) const {
  std::vector<std::string> hosts;
  for (const auto& [host, entry] : entries_) {
    if (blocked(host, now)) hosts.push_back(host);
  }
  return hosts;
}

int Blacklist::failures(const std::string& host) const {
  const auto found = entries_.find(host);
  return found == entries_.end() ? 0 : found->second.failures;
}

}  // namespace kolo::launcher
