// The elastic driver's slots (elastic_driver.h): which hosts and slots the job uses, starting
// workers on free ones, and the membership rounds published for the workers that count.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/errors.h"
#include "launcher/elastic/elastic_driver.h"
#include "launcher/elastic/rounds.h"

namespace kolo::launcher {

int ElasticDriver::drop_workers_of(const std::string& host) {
  int dropped = 0;
  for (auto& worker : workers_) {
    if (worker->included() && worker->who.host == host) {
      worker->removed = true;
      ++dropped;
    }
  }
  if (dropped > 0)
    say(fmt::format("host {} leaves the job with its {} other worker(s)", host, dropped));
  return dropped;
}

int ElasticDriver::included_count() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(), [](const auto& w) { return w->included(); }));
}

int ElasticDriver::usable_slots(Clock::time_point now) const {
  // The workers that count now, plus the free slots of hosts that may get new ones.
  int slots = included_count() + pool_.open_slots(now);
  for (const auto& worker : workers_) {
    if (worker->included() && !pool_.blacklist().blocked(worker->who.host, now)) --slots;
  }
  return slots;
}

bool ElasticDriver::refresh_pool(Clock::time_point now) {
  const auto change = pool_.refresh(now, logger_);
  if (!change) return false;
  bool changed = !change->added.empty() || !change->removed.empty();
  for (const auto& host : change->added) {
    say(fmt::format("host {} added ({} slots)", host.host, host.slots));
  }
  for (auto& worker : workers_) {
    if (worker->included() && !pool_.has_slot(worker->who.host, worker->who.slot)) {
      worker->removed = true;
      pending_change_.insert("removed");
      changed = true;
    }
  }
  for (const auto& host : change->removed) {
    say(fmt::format("host {} removed; its workers leave at the next reset", host));
  }
  return changed;
}

void ElasticDriver::spawn(const std::string& host, int slot, int planned_rank, int planned_size) {
  auto worker = start_elastic_worker(ElasticWorker{next_serial_++, host, slot}, planned_rank,
                                     planned_size, round_ + 1, options_, base_env_, services_);
  logger_.info("started worker {} (pid {})", worker->who.id(), worker->pid);
  workers_.push_back(std::move(worker));
}

int ElasticDriver::fill_slots(Clock::time_point now, bool changing) {
  if (finishing_ || failure_code_) return 0;
  Blacklist& blacklist = pool_.blacklist();
  if (changing || included_count() < options_.min_np) blacklist.readmit(now);
  // Horovod's rule: every usable slot up to --max-np (all of them without it), from the first
  // round on, whether the pool is fixed (-H, --hostfile) or discovered; -np and --min-np are only
  // what the job waits for.
  const int target = elastic_target(usable_slots(now), options_.max_np);
  const int wanted = target - included_count();
  if (wanted <= 0) return 0;
  std::vector<ElasticWorker> running;
  for (const auto& worker : workers_) {
    if (worker->running()) running.push_back(worker->who);
  }
  const auto free = slots_to_fill(
      pool_.hosts(),
      [&](const std::string& host) {
        return blacklist.blocked(host, now) || blacklist.cooled_down(host, now);
      },
      running, wanted);
  int started = 0;
  const int size = included_count() + static_cast<int>(free.size());
  for (const auto& [host, slot] : free) {
    try {
      spawn(host, slot, included_count(), size);
      ++started;
    } catch (const Error& error) {
      say(fmt::format("cannot start a worker on host {}: {}; host blacklisted", host,
                      error.what()));
      blacklist.add(host, now);
    }
  }
  return started;
}

void ElasticDriver::publish_round(const std::string& why) {
  std::vector<ElasticWorker> candidates;
  for (const auto& worker : workers_) {
    if (worker->included()) candidates.push_back(worker->who);
  }
  const auto members = round_order(candidates);
  const int64_t round = round_ + 1;
  store_->publish_round(round, members);
  round_ = round;
  if (round > 1) ++resets_;
  reset_started_.reset();
  pending_change_.clear();  // the new round already reflects every change so far
  std::map<std::string, int> rank_of;
  for (size_t r = 0; r < members.size(); ++r) rank_of[members[r].id()] = static_cast<int>(r);
  const auto now = Clock::now();
  for (auto& worker : workers_) {
    const auto found = rank_of.find(worker->who.id());
    worker->member = found != rank_of.end();
    worker->rank = worker->member ? found->second : -1;
    if (!worker->member && worker->running() && !worker->dismissed_at) worker->dismissed_at = now;
  }
  logger_.info("round {} published: {} worker(s) ({})", round, members.size(), why);
}

}  // namespace kolo::launcher
