// Elastic training, the worker's side of a membership round (docs/elastic_protocol.md): kolorun
// owns membership and publishes numbered rounds in the rendezvous store; init() announces that
// this worker is ready for the next round, waits for a round that places it, and bootstraps that
// round's world, giving up at once if an even newer round supersedes it meanwhile.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "core/config.h"
#include "rendezvous/store.h"

namespace kolo::core {

// What kolorun tells an elastic worker (KOLO_ELASTIC=1): its stable id (KOLO_WORKER_ID), the
// first round it may join (KOLO_ELASTIC_FIRST_ROUND) and how long a round may take to come
// (KOLO_ELASTIC_TIMEOUT: kolorun waits that long for --min-np workers).
struct ElasticIdentity {
  std::string worker_id;
  int64_t first_round = 1;
  Duration round_wait = std::chrono::seconds(600);
  // nullopt when KOLO_ELASTIC is not set; throws InvalidArgument for a bad variable.
  static std::optional<ElasticIdentity> from_env(const EnvLookup& lookup, Duration start_timeout);
};

struct ElasticSeat {
  int64_t round = 0;
  int rank = 0;
  int size = 1;
};

// The latest published round, 0 before the first.
int64_t published_round(rendezvous::Store& store);

// Writes this worker's ready key for round `next` (its value: `host`), then waits for a published
// round >= `next` and returns this worker's place in it. Throws WorkerRemovedError when that
// round leaves the worker out, TimeoutError after identity.round_wait.
ElasticSeat join_elastic_round(rendezvous::Store& store, const ElasticIdentity& identity,
                               int64_t next, const std::string& host);

// For LaunchInfo::abandon_check: throws kolo::Error (HorovodInternalError in Python) once a
// round later than `round` is published. Thread-safe; asks `store` at most every 200 ms.
std::function<void()> superseded_check(std::unique_ptr<rendezvous::Store> store, int64_t round);

}  // namespace kolo::core
