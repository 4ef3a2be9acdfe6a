// The controller: once per background cycle, every rank of a communicator learns which of the
// submitted collectives are ready on all ranks, in one order that every rank agrees on.
//
// Protocol per cycle (a collective over the communicator, so it is also the heartbeat):
//  1. each rank classifies its pending requests against its response cache: hit (set its bit),
//     invalid (cached with other parameters: set its invalid bit) or uncached;
//  2. one bitwise-AND allreduce of [flags, hit bits..., inverted invalid bits...]; the flags and
//     the invalid bits are stored inverted so that the AND computes "some rank has ...";
//  3. hit bits set on every rank are ready (in bit order); invalid bits are erased everywhere and
//     every rank's requests for them go to the coordinator in this same cycle;
//  4. only if some rank has uncached requests or is shutting down: every rank gathers its
//     not-yet-sent requests to rank 0, whose Coordinator answers with a ResponseList that is
//     broadcast back; every rank caches the new successful responses in the same order.
// Steady-state training (same tensors every step) therefore costs one small allreduce a cycle.
// While any rank has joined (hvd.join()), flag bit 2 says so and every request goes to the
// coordinator: the joined rank holds no request, so it can neither set cache bits nor cache.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "base/clock.h"
#include "base/logger.h"
#include "comm/communicator.h"
#include "negotiation/cache_bits.h"
#include "negotiation/coordinator.h"
#include "negotiation/message.h"
#include "negotiation/response_cache.h"

namespace kolo::negotiation {

struct ControllerOptions {
  // Response cache entries (HOROVOD_CACHE_CAPACITY); 0 disables the cache. Must be equal on
  // every rank.
  size_t cache_capacity = 1024;
  // A request that has waited this long on its cache bit (some rank has not submitted the name)
  // is sent to the coordinator instead, invalidating the entry on every rank, so the stall
  // inspector's view of the coordinator's table names the missing ranks (Horovod does the same).
  // Zero: never.
  std::chrono::milliseconds stalled_cached_after{5000};
};

struct ControllerStats {
  uint64_t cycles = 0;
  // Cycles that made responses ready from cache bits alone, without exchanging request lists.
  uint64_t fast_cycles = 0;
  // Cycles that gathered request lists on the coordinator and broadcast its answer.
  uint64_t full_exchanges = 0;
  // Responses served from the cache.
  uint64_t cache_hits = 0;
  // Cache entries erased on every rank: some rank submitted the name with other parameters,
  // twice, or stalled on it (see stalled_cached_after).
  uint64_t cache_invalidations = 0;
  // Cached requests sent to the coordinator after waiting stalled_cached_after.
  uint64_t stalled_cached_requests = 0;
};

// A request this rank submitted that has no response yet.
struct LocalPending {
  std::string name;
  Clock::time_point since;
  bool sent_to_coordinator = false;  // false: waiting on cache bits or not yet classified
};

class Controller {
 public:
  // comm is borrowed and must outlive the controller; its rank 0 is the coordinator.
  Controller(comm::Communicator& comm, ControllerOptions options, const Logger& logger);
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Called by every rank once per cycle, also with nothing new (lockstep). new_requests are
  // stamped with this rank; requests stay pending across cycles until a response names them.
  // Returns the same list on every rank: responses ready from the cache (bit order), then those
  // the coordinator produced. shutdown = true when any rank passed shutting_down: every name that
  // could not complete then came back with an error, and the caller stops its loop.
  // Communication failures propagate (PeerError, ProtocolError); the controller is then unusable.
  [[nodiscard]] ResponseList cycle(std::vector<Request> new_requests, bool shutting_down);

  [[nodiscard]] const ControllerStats& stats() const { return stats_; }
  // This rank submitted a join that has not completed yet.
  [[nodiscard]] bool joined() const { return joined_; }
  // Whether a caller of this rank is blocked waiting for an operation; the next cycle agrees
  // whether every rank is (deadlock watch, core/deadlock_watch.h).
  void set_waiting(bool waiting) { waiting_ = waiting; }
  // In the last cycle, every rank had a caller blocked waiting for an operation.
  [[nodiscard]] bool all_waiting() const { return all_waiting_; }
  [[nodiscard]] const ResponseCache& cache() const { return cache_; }
  [[nodiscard]] std::vector<LocalPending> local_pending() const;
  // The coordinator's table (stall inspector); empty on ranks other than 0.
  [[nodiscard]] std::vector<PendingTensor> coordinator_pending() const;

  // Hooks for the timeline, stall inspector and autotuner (core/observability.h).
  // Rank 0: called with every request as it reaches the coordinator.
  void set_request_observer(std::function<void(const Request&)> observer) {
    request_observer_ = std::move(observer);
  }
  // Rank 0: fails a pending name on every rank in the next cycle (which becomes an exchange).
  void cancel(const std::string& name, const std::string& message);
  // Rank 0: the next cycle (an exchange) carries these to every rank in its ResponseList.
  void publish(const TunedParameters& parameters);
  // Every rank, in the same cycle: turns the response cache on (empty) or off.
  void set_cache_enabled(bool enabled);

 private:
  enum class Route { uncached, cached };
  struct Pending {
    Request request;
    Clock::time_point since;
    bool sent = false;
    Route route = Route::uncached;
    uint32_t bit = 0;  // Route::cached: the cache bit this request waits on
    bool answered = false;
  };
  using Agreement = CacheAgreement;

  Agreement classify_and_agree(Clock::time_point now, bool shutting_down);
  std::vector<Response> take_cached(const Agreement& agreement);
  ResponseList exchange(bool shutting_down, const Agreement& agreement);
  void cache_new_responses(const ResponseList& list);
  void remove_answered(const std::vector<Response>& responses);

  comm::Communicator& comm_;
  ControllerOptions options_;
  const Logger& logger_;
  ResponseCache cache_;
  std::unique_ptr<Coordinator> coordinator_;  // rank 0 only
  std::vector<Pending> pending_;              // submission order
  bool joined_ = false;  // this rank submitted a join that has not completed yet
  bool waiting_ = false;
  bool all_waiting_ = false;
  ControllerStats stats_;
  std::function<void(const Request&)> request_observer_;
  std::optional<TunedParameters> to_publish_;  // rank 0
  bool force_exchange_ = false;                // rank 0: cancel() or publish() needs an exchange
};

}  // namespace kolo::negotiation
