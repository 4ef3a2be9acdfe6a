#include "negotiation/controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "base/errors.h"
#include "comm/collectives.h"
#include "negotiation/wire.h"

namespace kolo::negotiation {

namespace {

constexpr int kCoordinator = 0;

// Join and process-set changes are one-off collectives: never worth a cache entry.
bool cacheable(const Response& response) {
  return response.op != OpType::join && response.op != OpType::process_set_add &&
         response.op != OpType::process_set_remove;
}

}  // namespace

Controller::Controller(comm::Communicator& comm, ControllerOptions options, const Logger& logger)
    : comm_(comm), options_(options), logger_(logger), cache_(options.cache_capacity) {
  if (comm_.rank() == kCoordinator) coordinator_ = std::make_unique<Coordinator>(comm_.size());
}

ResponseList Controller::cycle(std::vector<Request> new_requests, bool shutting_down) {
  ++stats_.cycles;
  Clock::time_point now = Clock::now();
  for (Request& request : new_requests) {
    request.rank = comm_.rank();
    if (request.op == OpType::join) joined_ = true;
    pending_.push_back(Pending{std::move(request), now});
  }

  Agreement agreement = classify_and_agree(now, shutting_down);
  all_waiting_ = agreement.all_waiting;
  ResponseList out;
  out.responses = take_cached(agreement);
  bool served_from_cache = !out.responses.empty();

  for (uint32_t bit : agreement.invalid_bits) {
    if (!cache_.contains(bit)) {
      throw ProtocolError(
          fmt::format("rank {}: cache bit {} was invalidated by another rank but "
                      "this rank has no entry there (caches diverged)",
                      comm_.rank(), bit));
    }
    logger_.debug(
        "response cache: erasing '{}' (bit {}): submitted with other parameters, twice, "
        "or stalled",
        cache_.response(bit).names[0], bit);
    cache_.erase(bit);
    ++stats_.cache_invalidations;
  }

  if (agreement.any_uncached || agreement.any_shutdown || agreement.any_joined) {
    ++stats_.full_exchanges;
    ResponseList answered = exchange(shutting_down, agreement);
    // A joined rank never submitted the tensors it takes part in, so it has no local request to
    // cache them with: while any rank is joined nothing is cached (the same on every rank).
    if (!agreement.any_joined) cache_new_responses(answered);
    for (const Response& response : answered.responses) {
      if (response.op == OpType::join) joined_ = false;
    }
    remove_answered(answered.responses);
    out.shutdown = answered.shutdown;
    out.shutdown_ranks = answered.shutdown_ranks;
    out.parameters = answered.parameters;
    for (Response& response : answered.responses) out.responses.push_back(std::move(response));
  } else if (served_from_cache) {
    ++stats_.fast_cycles;
  }
  return out;
}

Controller::Agreement Controller::classify_and_agree(Clock::time_point now, bool shutting_down) {
  // A name pending twice on this rank must reach the coordinator (which reports the duplicate),
  // so it never takes the cache path and its cached entry is invalidated on every rank: that
  // sends the other ranks' requests for the name to the coordinator as well.
  std::unordered_map<std::string_view, int> name_count;
  for (const Pending& p : pending_) ++name_count[p.request.name];

  CacheBitVector bits(cache_.bit_count());
  bool has_uncached = false;
  for (Pending& p : pending_) {
    if (p.sent) continue;
    p.route = Route::uncached;
    if (cache_.enabled()) {
      ResponseCache::Lookup found = cache_.lookup(p.request);
      bool duplicate = name_count[p.request.name] > 1;
      bool stalled = options_.stalled_cached_after.count() > 0 &&
                     now - p.since >= options_.stalled_cached_after;
      // A request marked invalid has no data: only the coordinator may answer it (with an
      // error). Its cached entry is invalidated, which sends the other ranks' requests there too.
      bool invalid = !p.request.invalid.empty();
      if (found.state == ResponseCache::State::hit && !duplicate && !stalled && !invalid) {
        p.route = Route::cached;
        p.bit = found.bit;
        bits.mark_hit(found.bit);
        continue;
      }
      if (found.state == ResponseCache::State::hit && stalled && !duplicate && !invalid) {
        logger_.debug("tensor '{}' waited {} ms on its cache bit; asking the coordinator",
                      p.request.name,
                      std::chrono::duration_cast<std::chrono::milliseconds>(now - p.since).count());
        ++stats_.stalled_cached_requests;
      }
      if (found.state != ResponseCache::State::miss) bits.mark_invalid(found.bit);
    }
    has_uncached = true;
  }
  has_uncached = has_uncached || std::exchange(force_exchange_, false);
  if (has_uncached) bits.mark_uncached();
  if (shutting_down) bits.mark_shutting_down();
  if (joined_) bits.mark_joined();
  if (!waiting_) bits.mark_not_waiting();

  std::vector<uint64_t> words = bits.contribution();
  comm::allreduce(comm_, std::as_writable_bytes(std::span(words)), words.size(), DataType::uint64,
                  ReduceOp::bitwise_and);
  return bits.decode(words, comm_.rank());
}

std::vector<Response> Controller::take_cached(const Agreement& agreement) {
  std::vector<Response> ready;
  if (agreement.ready_bits.empty()) return ready;
  // Every rank set each ready bit, so on every rank exactly one request waits on it.
  std::unordered_map<uint32_t, Pending*> waiter;
  for (Pending& p : pending_) {
    if (!p.sent && p.route == Route::cached) waiter[p.bit] = &p;
  }
  for (uint32_t bit : agreement.ready_bits) {
    auto it = waiter.find(bit);
    if (it == waiter.end()) {
      throw ProtocolError(
          fmt::format("rank {}: cache bit {} agreed by all ranks but no request of "
                      "this rank waits on it (caches diverged)",
                      comm_.rank(), bit));
    }
    it->second->answered = true;
    ready.push_back(cache_.response(bit));
    cache_.touch(bit);
    ++stats_.cache_hits;
  }
  std::erase_if(pending_, [](const Pending& p) { return p.answered; });
  return ready;
}

ResponseList Controller::exchange(bool shutting_down, const Agreement& agreement) {
  RequestList mine;
  mine.shutdown = shutting_down;
  for (Pending& p : pending_) {
    if (p.sent) continue;
    // A request waiting on a bit that was just invalidated goes to the coordinator now (the
    // invalidating rank sends its own request in this exchange too), so a changed shape costs
    // no extra cycle. Once shutdown is announced nothing waits on cache bits any more: the
    // coordinator must see every pending request to fail the ones that cannot complete.
    // A joined rank sets no cache bits, so while one is joined every request goes to the
    // coordinator, which counts joined ranks as having submitted.
    bool keep_waiting =
        p.route == Route::cached && !agreement.any_shutdown && !agreement.any_joined &&
        !std::binary_search(agreement.invalid_bits.begin(), agreement.invalid_bits.end(), p.bit);
    if (keep_waiting) continue;
    mine.requests.push_back(p.request);
    p.sent = true;
  }

  std::vector<std::vector<std::byte>> frames =
      comm::gather_frames(comm_, encode(mine), kCoordinator);
  if (comm_.rank() != kCoordinator) {
    return decode_response_list(comm::broadcast_frame(comm_, {}, kCoordinator), kCoordinator);
  }

  Clock::time_point now = Clock::now();
  for (int r = 0; r < comm_.size(); ++r) {
    RequestList list = decode_request_list(frames[static_cast<size_t>(r)], r);
    if (request_observer_) {
      for (const Request& request : list.requests) request_observer_(request);
    }
    coordinator_->add(list, r, now);
  }
  ResponseList answered = coordinator_->take_responses();
  answered.parameters = std::exchange(to_publish_, std::nullopt);
  logger_.debug("coordinator: {} response(s), {} name(s) still pending{}",
                answered.responses.size(), coordinator_->pending_count(),
                answered.shutdown ? ", shutting down" : "");
  comm::broadcast_frame(comm_, encode(answered), kCoordinator);
  return answered;
}

void Controller::cache_new_responses(const ResponseList& list) {
  std::unordered_map<std::string_view, const Request*> sent;
  for (const Pending& p : pending_) {
    if (p.sent) sent.emplace(p.request.name, &p.request);
  }
  // A group is cached whole or not at all: a member served from the cache never reaches the
  // coordinator, which would then hold the group's other members forever, waiting for it. The
  // cache holds single-name responses only, and merge_group answers members of one dtype with
  // one multi-name response, so a group that has one (such as float32, float64, float64) stays
  // out of the cache entirely. A whole group is released in one list, so one pass decides.
  std::unordered_set<int32_t> uncached_groups;
  for (const Response& response : list.responses) {
    if (response.names.size() == 1) continue;
    for (const std::string& name : response.names) {
      auto it = sent.find(name);
      if (it != sent.end() && it->second->group_id != 0) {
        uncached_groups.insert(it->second->group_id);
      }
    }
  }
  for (const Response& response : list.responses) {
    if (!response.error.empty() || !cacheable(response)) continue;
    // Every rank submitted a name that succeeded, so every rank finds its own request here and
    // all caches take the same entries in the same order.
    for (const std::string& name : response.names) {
      auto it = sent.find(name);
      if (it == sent.end()) {
        throw ProtocolError(fmt::format(
            "rank {}: coordinator answered tensor '{}' which this rank has not submitted",
            comm_.rank(), name));
      }
      if (response.names.size() == 1 && !uncached_groups.contains(it->second->group_id)) {
        cache_.put(response, *it->second);
      }
    }
  }
}

void Controller::remove_answered(const std::vector<Response>& responses) {
  std::unordered_set<std::string_view> names;
  for (const Response& response : responses) {
    for (const std::string& name : response.names) names.insert(name);
  }
  std::erase_if(pending_, [&](const Pending& p) { return names.count(p.request.name) > 0; });
}

std::vector<LocalPending> Controller::local_pending() const {
  std::vector<LocalPending> out;
  out.reserve(pending_.size());
  for (const Pending& p : pending_) out.push_back({p.request.name, p.since, p.sent});
  return out;
}

std::vector<PendingTensor> Controller::coordinator_pending() const {
  return coordinator_ ? coordinator_->pending() : std::vector<PendingTensor>{};
}

void Controller::cancel(const std::string& name, const std::string& message) {
  if (!coordinator_) return;
  coordinator_->cancel(name, message);
  force_exchange_ = true;
}

void Controller::publish(const TunedParameters& parameters) {
  if (!coordinator_) return;
  to_publish_ = parameters;
  force_exchange_ = true;
}

void Controller::set_cache_enabled(bool enabled) {
  if (enabled == cache_.enabled()) return;
  // Pending requests waiting on bits of the old cache are classified afresh next cycle.
  cache_ = ResponseCache(enabled ? options_.cache_capacity : 0);
}

}  // namespace kolo::negotiation
