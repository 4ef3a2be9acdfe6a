// The worker's side of elastic membership against an in-memory store: the ready announcement,
// waiting for a round that places the worker, removal, the wait's limit, and the superseded-round
// check bootstrap uses.
#include "core/elastic_join.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "base/errors.h"
#include "base/fake_env.h"
#include "rendezvous/elastic_keys.h"
#include "rendezvous/in_memory_store.h"

namespace kolo::core {
namespace {

using namespace std::chrono_literals;

ElasticIdentity identity(const std::string& id, Duration wait = 20s) {
  ElasticIdentity who;
  who.worker_id = id;
  who.round_wait = wait;
  return who;
}

void publish(rendezvous::Store& store, int64_t round,
             const std::map<std::string, std::string>& seats) {
  for (const auto& [id, seat] : seats) store.set(rendezvous::elastic_assign_key(round, id), seat);
  store.set(std::string(rendezvous::kElasticRoundKey), std::to_string(round));
}

TEST(ElasticIdentity, FromEnvironment) {
  EXPECT_FALSE(ElasticIdentity::from_env(env_of({}), 30s).has_value());
  EXPECT_FALSE(ElasticIdentity::from_env(env_of({{"KOLO_ELASTIC", "0"}}), 30s).has_value());
  const auto who = ElasticIdentity::from_env(env_of({{"KOLO_ELASTIC", "1"},
                                                     {"KOLO_WORKER_ID", "h:0#4"},
                                                     {"KOLO_ELASTIC_FIRST_ROUND", "3"},
                                                     {"KOLO_ELASTIC_TIMEOUT", "10"}}),
                                             30s);
  ASSERT_TRUE(who.has_value());
  EXPECT_EQ(who->worker_id, "h:0#4");
  EXPECT_EQ(who->first_round, 3);
  EXPECT_EQ(who->round_wait, std::chrono::duration_cast<Duration>(40s));
  EXPECT_THROW(ElasticIdentity::from_env(env_of({{"KOLO_ELASTIC", "1"}}), 30s), InvalidArgument);
  EXPECT_THROW(ElasticIdentity::from_env(env_of({{"KOLO_ELASTIC", "1"},
                                                 {"KOLO_WORKER_ID", "w"},
                                                 {"KOLO_ELASTIC_TIMEOUT", "soon"}}),
                                         30s),
               InvalidArgument);
}

TEST(ElasticJoin, AnnouncesReadyAndTakesItsSeatInTheNextRound) {
  rendezvous::InMemoryStore store;
  publish(store, 1, {{"a:0#0", "0 2"}, {"a:1#1", "1 2"}});
  std::thread launcher([&] {
    EXPECT_EQ(store.get(rendezvous::elastic_ready_key(2, "a:1#1"), 20s), "a");
    EXPECT_EQ(store.get(rendezvous::elastic_ready_count_key(2), 1s), "1");
    publish(store, 2, {{"a:1#1", "0 1"}});
  });
  const ElasticSeat seat = join_elastic_round(store, identity("a:1#1"), 2, "a");
  launcher.join();
  EXPECT_EQ(seat.round, 2);
  EXPECT_EQ(seat.rank, 0);
  EXPECT_EQ(seat.size, 1);
}

TEST(ElasticJoin, ALaterRoundThanAskedForIsTaken) {
  rendezvous::InMemoryStore store;
  publish(store, 5, {{"w", "2 3"}});
  const ElasticSeat seat = join_elastic_round(store, identity("w"), 3, "h");
  EXPECT_EQ(seat.round, 5);
  EXPECT_EQ(seat.rank, 2);
  EXPECT_EQ(seat.size, 3);
}

TEST(ElasticJoin, LeftOutOfTheRoundMeansRemoved) {
  rendezvous::InMemoryStore store;
  publish(store, 2, {{"other", "0 1"}});
  try {
    join_elastic_round(store, identity("gone:0#3"), 2, "gone");
    FAIL() << "a worker without a seat joined";
  } catch (const WorkerRemovedError& error) {
    EXPECT_NE(std::string(error.what()).find("gone:0#3 is not a member of round 2"),
              std::string::npos)
        << error.what();
  }
}

TEST(ElasticJoin, NoRoundInTimeIsATimeoutNamingTheRound) {
  rendezvous::InMemoryStore store;
  try {
    join_elastic_round(store, identity("w", 200ms), 1, "h");
    FAIL() << "joined without a round";
  } catch (const TimeoutError& error) {
    EXPECT_NE(std::string(error.what()).find("for membership round 1 (latest published: 0)"),
              std::string::npos)
        << error.what();
  }
}

TEST(ElasticJoin, SupersededCheckThrowsOnceANewerRoundIsPublished) {
  auto owned = std::make_unique<rendezvous::InMemoryStore>();
  rendezvous::InMemoryStore& store = *owned;
  publish(store, 2, {{"w", "0 2"}});
  const auto check = superseded_check(std::move(owned), 2);
  EXPECT_NO_THROW(check());
  publish(store, 3, {{"w", "0 1"}});
  std::this_thread::sleep_for(250ms);  // the check looks at most every 200 ms
  try {
    check();
    FAIL() << "a superseded round was not noticed";
  } catch (const WorkerRemovedError&) {
    FAIL() << "superseded is a failure to retry, not a removal";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("round 2 was superseded by round 3"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace kolo::core
