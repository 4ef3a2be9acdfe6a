#include "core/elastic_join.h"

#include <fmt/format.h>

#include <charconv>
#include <mutex>
#include <thread>

#include "base/errors.h"
#include "rendezvous/elastic_keys.h"
#include "rendezvous/elastic_seat.h"

namespace kolo::core {

namespace {

// How often a waiting worker looks at the round key (the launcher publishes within ~100 ms).
constexpr auto kPollInterval = std::chrono::milliseconds(50);
constexpr auto kSupersededInterval = std::chrono::milliseconds(200);

int64_t parse_number(std::string_view text, const std::string& what) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    throw InvalidArgument(fmt::format("{}='{}' is not a non-negative integer", what, text));
  }
  return value;
}

std::optional<std::string> read_now(rendezvous::Store& store, const std::string& key) {
  try {
    return store.get(key, Duration::zero());
  } catch (const TimeoutError&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<ElasticIdentity> ElasticIdentity::from_env(const EnvLookup& lookup,
                                                         Duration start_timeout) {
  const auto flag = lookup("KOLO_ELASTIC");
  if (!flag || flag->empty() || *flag == "0") return std::nullopt;
  ElasticIdentity identity;
  identity.worker_id = lookup("KOLO_WORKER_ID").value_or("");
  if (identity.worker_id.empty()) {
    throw InvalidArgument(
        "KOLO_ELASTIC=1 but no KOLO_WORKER_ID: elastic workers must be started by kolorun "
        "--min-np/--max-np/--host-discovery-script");
  }
  if (auto first = lookup("KOLO_ELASTIC_FIRST_ROUND"); first && !first->empty()) {
    identity.first_round = std::max<int64_t>(1, parse_number(*first, "KOLO_ELASTIC_FIRST_ROUND"));
  }
  double wait = 600;
  if (auto text = lookup("KOLO_ELASTIC_TIMEOUT"); text && !text->empty()) {
    char* end = nullptr;
    wait = std::strtod(text->c_str(), &end);
    if (end == text->c_str() || *end != '\0' || !(wait > 0)) {
      throw InvalidArgument(
          fmt::format("KOLO_ELASTIC_TIMEOUT='{}' is not a positive number of seconds", *text));
    }
  }
  // kolorun may wait up to the elastic timeout for --min-np workers; the round then still needs
  // its workers started.
  identity.round_wait =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(wait)) + start_timeout;
  return identity;
}

int64_t published_round(rendezvous::Store& store) {
  const auto text = read_now(store, std::string(rendezvous::kElasticRoundKey));
  return text ? parse_number(*text, std::string(rendezvous::kElasticRoundKey)) : 0;
}

ElasticSeat join_elastic_round(rendezvous::Store& store, const ElasticIdentity& identity,
                               int64_t next, const std::string& host) {
  store.set(rendezvous::elastic_ready_key(next, identity.worker_id), host);
  (void)store.add(rendezvous::elastic_ready_count_key(next), 1);
  const Deadline deadline(identity.round_wait);
  for (;;) {
    const int64_t round = published_round(store);
    if (round >= next) {
      const auto seat = read_now(store, rendezvous::elastic_assign_key(round, identity.worker_id));
      if (!seat) {
        throw WorkerRemovedError(fmt::format(
            "elastic worker {} is not a member of round {}: its host or slot was removed "
            "from the job; this worker should end (exit code 0)",
            identity.worker_id, round));
      }
      const auto value = rendezvous::decode_elastic_seat(*seat, identity.worker_id);
      ElasticSeat placed;
      placed.round = round;
      placed.rank = value.rank;
      placed.size = value.size;
      return placed;
    }
    if (deadline.expired()) {
      throw TimeoutError(fmt::format(
          "elastic worker {} waited {:.3g} s for membership round {} (latest published: {}): "
          "kolorun did not gather enough workers (--min-np) in time",
          identity.worker_id, std::chrono::duration<double>(identity.round_wait).count(), next,
          round));
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

std::function<void()> superseded_check(std::unique_ptr<rendezvous::Store> store, int64_t round) {
  struct State {
    std::mutex mutex;
    std::unique_ptr<rendezvous::Store> store;
    Clock::time_point next_look{};
  };
  auto state = std::make_shared<State>();
  state->store = std::move(store);
  return [state, round] {
    std::lock_guard lock(state->mutex);
    const auto now = Clock::now();
    if (now < state->next_look) return;
    state->next_look = now + kSupersededInterval;
    const int64_t latest = published_round(*state->store);
    if (latest > round) {
      throw Error(fmt::format(
          "elastic round {} was superseded by round {} while this worker was joining it (a "
          "peer failed or left during the reset); reset again",
          round, latest));
    }
  };
}

}  // namespace kolo::core
