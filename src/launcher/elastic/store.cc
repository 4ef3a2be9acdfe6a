#include "launcher/elastic/store.h"

#include <fmt/format.h>

#include <stdexcept>

#include "base/errors.h"
#include "rendezvous/elastic_keys.h"

namespace kolo::launcher {

// Reads never wait (Duration::zero()): the driver polls, and a missing key is an answer.

void ElasticStore::publish_round(int64_t round, const std::vector<ElasticWorker>& members) {
  for (const auto& [key, value] : round_publication(round, members)) store_.set(key, value);
}

void ElasticStore::announce_hosts_updated(int64_t stamp, const std::string& kind) {
  store_.set(std::string(rendezvous::kElasticHostsUpdatedKey), fmt::format("{} {}", stamp, kind));
}

void ElasticStore::report_lost_member(int64_t round, const std::string& cause) {
  store_.set(rendezvous::elastic_failure_key(round), cause);
}

int64_t ElasticStore::ready_count(int64_t round) {
  try {
    return std::stoll(store_.get(rendezvous::elastic_ready_count_key(round), Duration::zero()));
  } catch (const Error&) {
    return 0;  // nobody asked for that round
  } catch (const std::logic_error&) {
    return 0;  // not a number (stoll): treated as nobody
  }
}

bool ElasticStore::is_ready(int64_t round, const std::string& worker_id) {
  try {
    (void)store_.get(rendezvous::elastic_ready_key(round, worker_id), Duration::zero());
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string ElasticStore::last_commit() {
  try {
    return store_.get(std::string(rendezvous::kElasticCommitKey), Duration::zero());
  } catch (const Error&) {
    return "0";  // nothing committed yet
  }
}

}  // namespace kolo::launcher
