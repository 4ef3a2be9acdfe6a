// kolorun's side of the elastic keys in the job's rendezvous store (docs/elastic_protocol.md):
// what the driver publishes for the workers (rounds, host changes, a lost member's cause) and
// what it reads back from them (who is ready for the next round, the last commit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "launcher/elastic/rounds.h"
#include "rendezvous/tcp_store.h"

namespace kolo::launcher {

class ElasticStore {
 public:
  explicit ElasticStore(rendezvous::TcpStore& store) : store_(store) {}

  // Every assignment of round `round` (members in rank order), then the round number.
  void publish_round(int64_t round, const std::vector<ElasticWorker>& members);
  // Tells the members that hosts were added or removed ("added", "removed" or "mixed"); `stamp`
  // grows with every announcement, so a worker sees each one once.
  void announce_hosts_updated(int64_t stamp, const std::string& kind);
  // Where the survivors of round `round` read why a member was lost.
  void report_lost_member(int64_t round, const std::string& cause);

  // How many workers asked for round `round` (0 when none did yet).
  [[nodiscard]] int64_t ready_count(int64_t round);
  [[nodiscard]] bool is_ready(int64_t round, const std::string& worker_id);
  // The last commit the workers recorded, "0" before the first.
  [[nodiscard]] std::string last_commit();

 private:
  rendezvous::TcpStore& store_;
};

}  // namespace kolo::launcher
