#include "launcher/elastic/blacklist.h"

namespace kolo::launcher {

Blacklist::Blacklist(std::optional<std::pair<double, double>> cooldown, uint32_t seed)
    : cooldown_(cooldown), random_(seed == 0 ? std::random_device{}() : seed) {}

void Blacklist::add(const std::string& host, Clock::time_point now) {
  Entry& entry = entries_[host];
  ++entry.failures;
  if (!cooldown_) {
    entry.until.reset();
    return;
  }
  std::uniform_real_distribution<double> draw(cooldown_->first, cooldown_->second);
  entry.until =
      now + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(draw(random_)));
}

bool Blacklist::blocked(const std::string& host, Clock::time_point now) const {
  const auto found = entries_.find(host);
  if (found == entries_.end()) return false;
  return !found->second.until || now < *found->second.until;
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
