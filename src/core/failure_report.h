// What a surviving rank says when a peer failed. The peer named by the transport may only be a
// messenger: a rank that dies takes its neighbours down one by one, and a rank that hangs leaves
// a chain of ranks each waiting on the next. The rendezvous store tells the rest of the story:
// every rank that times out publishes whom it waited on, so the chain leads to the rank that
// stopped responding, and kolorun publishes the first rank that failed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "base/logger.h"
#include "rendezvous/store.h"

namespace kolo::core {

class FailureReport {
 public:
  // `store` may be null (a single process has none): messages are then the error's own.
  // `failure_key`: where the launcher reports a lost rank (elastic: the round's own key).
  // `hostnames[r]`: rank r's host, named beside the rank that stopped responding (empty: ranks
  // are named alone).
  FailureReport(rendezvous::Store* store, uint64_t round, int rank, int size, const Logger& logger,
                std::string failure_key = "kolo/failure", std::vector<std::string> hostnames = {})
      : store_(store),
        round_(round),
        rank_(rank),
        size_(size),
        logger_(logger),
        failure_key_(std::move(failure_key)),
        hostnames_(std::move(hostnames)) {}

  // `error`'s message, followed by the root cause when the store can tell it: the rank at the
  // end of a wait chain, ranks waiting on each other in a cycle, or the launcher's report of the
  // first failure. Publishes this rank's own wait when `error` is a silent peer.
  [[nodiscard]] std::string with_root_cause(const PeerError& error) const;

 private:
  // Publishes that this rank waited on `awaited` and follows the chain of published waits.
  [[nodiscard]] std::string trace_wait_chain(int awaited) const;
  // The store key where a rank that timed out publishes whom it waited on.
  [[nodiscard]] std::string stuck_key(int rank) const;
  // Whether `rank` published whom it waited on (it timed out on a peer before it left).
  [[nodiscard]] bool published_a_wait(int rank) const;
  // "rank 3 on host 'node2'" (the words the transport's own errors use), or "rank 3".
  [[nodiscard]] std::string rank_on_host(int rank) const;

  rendezvous::Store* store_;
  uint64_t round_;
  int rank_;
  int size_;
  const Logger& logger_;
  std::string failure_key_;
  std::vector<std::string> hostnames_;
};

}  // namespace kolo::core
