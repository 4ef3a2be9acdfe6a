// Elastic membership pieces without processes: discovery output, the blacklist and its cooldown,
// round order and publication, free slots, the --min-np timeout decision, and what a worker's
// exit does.
#include <gtest/gtest.h>

#include <map>

#include "base/errors.h"
#include "launcher/elastic/blacklist.h"
#include "launcher/elastic/discovery.h"
#include "launcher/elastic/exit_policy.h"
#include "launcher/elastic/rounds.h"
#include "rendezvous/elastic_keys.h"

namespace kolo::launcher {
namespace {

using namespace std::chrono_literals;

const Clock::time_point t0 = Clock::now();

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "";
}

TEST(DiscoveryOutput, HostsWithAndWithoutSlots) {
  const auto hosts = parse_discovery_output("a:2\n\n  b  \r\nc:4\na:3\n", 1);
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0], (HostSlots{"a", 3}));  // listed twice: the last count wins
  EXPECT_EQ(hosts[1], (HostSlots{"b", 1}));  // --slots default
  EXPECT_EQ(hosts[2], (HostSlots{"c", 4}));
  EXPECT_TRUE(parse_discovery_output("", 2).empty());
  EXPECT_EQ(parse_discovery_output("x", 8).front().slots, 8);
}

TEST(DiscoveryOutput, BadLinesAreNamed) {
  const std::string zero = error_of([] { parse_discovery_output("a:1\nb:0\n", 1); });
  EXPECT_NE(zero.find("line 2 ('b:0')"), std::string::npos) << zero;
  const std::string word = error_of([] { parse_discovery_output("a:two", 1); });
  EXPECT_NE(word.find("'two' is not a positive slot count"), std::string::npos) << word;
  const std::string name = error_of([] { parse_discovery_output("a b:1", 1); });
  EXPECT_NE(name.find("'a b' is not a host name"), std::string::npos) << name;
}

TEST(DiscoveryScript, OutputAndFailures) {
  EXPECT_EQ(run_discovery_script("printf 'a:1\\nb:2\\n'", 10s), "a:1\nb:2\n");
  try {
    run_discovery_script("echo broken >&2; exit 3", 10s);
    FAIL() << "a failing script was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("exited with code 3: broken"), std::string::npos)
        << error.what();
  }
  try {
    run_discovery_script("sleep 30", 300ms);
    FAIL() << "a hanging script was waited for";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("did not finish"), std::string::npos) << error.what();
  }
}

TEST(Blacklist, ForGoodWithoutCooldown) {
  Blacklist blacklist(std::nullopt);
  EXPECT_FALSE(blacklist.blocked("a", t0));
  blacklist.add("a", t0);
  EXPECT_TRUE(blacklist.blocked("a", t0 + 24h));
  EXPECT_FALSE(blacklist.blocked("b", t0));
  EXPECT_EQ(blacklist.blocked_hosts(t0), std::vector<std::string>{"a"});
  blacklist.add("a", t0);
  EXPECT_EQ(blacklist.failures("a"), 2);
}

TEST(Blacklist, CooldownIsDrawnFromTheRange) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    Blacklist blacklist(std::make_pair(2.0, 5.0), seed);
    blacklist.add("a", t0);
    EXPECT_TRUE(blacklist.blocked("a", t0 + 1999ms)) << seed;
    EXPECT_FALSE(blacklist.blocked("a", t0 + 5001ms)) << seed;
    EXPECT_TRUE(blacklist.blocked_hosts(t0 + 6s).empty());
    blacklist.add("a", t0 + 10s);  // failed again after re-admission: out again
    EXPECT_TRUE(blacklist.blocked("a", t0 + 11s)) << seed;
  }
}

TEST(Blacklist, CooldownGrowsWithEachFailureAsHorovods) {
  // MIN * 2^failures + up to MIN of jitter, within MIN..MAX: [2, 3) s, then [4, 5) s.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    Blacklist blacklist(std::make_pair(1.0, 100.0), seed);
    blacklist.add("a", t0);
    EXPECT_TRUE(blacklist.blocked("a", t0 + 1999ms)) << seed;
    EXPECT_FALSE(blacklist.blocked("a", t0 + 3001ms)) << seed;
    blacklist.add("a", t0 + 10s);
    EXPECT_TRUE(blacklist.blocked("a", t0 + 13999ms)) << seed;
    EXPECT_FALSE(blacklist.blocked("a", t0 + 15001ms)) << seed;
  }
  Blacklist capped(std::make_pair(1.0, 1.5), 7);  // MAX wins over the backoff
  for (int i = 0; i < 5; ++i) capped.add("a", t0);
  EXPECT_FALSE(capped.blocked("a", t0 + 1501ms));
}

TEST(Blacklist, FailureDuringTheCooldownCountsOnce) {
  // Horovod's HostState.blacklist(): within the cooldown a second failure is the same one.
  Blacklist blacklist(std::make_pair(1.0, 100.0), 3);
  blacklist.add("a", t0);
  blacklist.add("a", t0 + 100ms);
  EXPECT_EQ(blacklist.failures("a"), 1);
  EXPECT_FALSE(blacklist.blocked("a", t0 + 3001ms));  // [2, 3) s, not the second failure's [4, 5)
  blacklist.add("a", t0 + 10s);
  EXPECT_EQ(blacklist.failures("a"), 2);
}

TEST(Blacklist, CooledDownHostWaitsForTheNextMembershipChange) {
  Blacklist blacklist(std::make_pair(1.0, 2.0), 5);
  blacklist.add("a", t0);
  EXPECT_FALSE(blacklist.cooled_down("a", t0 + 1s));  // still blocked: [1, 2] s
  EXPECT_TRUE(blacklist.blocked("a", t0 + 1s));
  blacklist.readmit(t0 + 1s);  // a change during the cooldown does not shorten it
  EXPECT_TRUE(blacklist.blocked("a", t0 + 1s));
  EXPECT_FALSE(blacklist.blocked("a", t0 + 2001ms));
  EXPECT_TRUE(blacklist.cooled_down("a", t0 + 2001ms));
  EXPECT_TRUE(blacklist.cooled_down("a", t0 + 1h));  // however long: it waits for a change
  EXPECT_FALSE(blacklist.cooled_down("b", t0 + 1h));
  blacklist.readmit(t0 + 1h);
  EXPECT_FALSE(blacklist.cooled_down("a", t0 + 1h));
  EXPECT_FALSE(blacklist.blocked("a", t0 + 1h));
  blacklist.add("a", t0 + 2h);  // fails again: blocked, then waits again
  EXPECT_TRUE(blacklist.blocked("a", t0 + 2h + 1s));
  EXPECT_TRUE(blacklist.cooled_down("a", t0 + 3h));
  Blacklist for_good(std::nullopt);
  for_good.add("a", t0);
  EXPECT_FALSE(for_good.cooled_down("a", t0 + 24h));
}

TEST(ElasticRounds, WorkerIdsAndOrderKeepSurvivorsFirst) {
  EXPECT_EQ((ElasticWorker{7, "node2", 1}).id(), "node2:1#7");
  // Round 1 was serials 0..3; 1 died; 5 and 4 are new (given out of order).
  const auto order = round_order({{5, "c", 0}, {3, "b", 1}, {0, "a", 0}, {4, "c", 1}, {2, "b", 0}});
  std::vector<int> serials;
  for (const auto& worker : order) serials.push_back(worker.serial);
  EXPECT_EQ(serials, (std::vector<int>{0, 2, 3, 4, 5}));
}

TEST(ElasticRounds, PublicationWritesAssignmentsThenTheRound) {
  const auto writes = round_publication(4, {{0, "a", 0}, {2, "b", 0}});
  ASSERT_EQ(writes.size(), 4u);
  EXPECT_EQ(writes[0],
            std::make_pair(rendezvous::elastic_assign_key(4, "a:0#0"), std::string("0 2")));
  EXPECT_EQ(writes[1],
            std::make_pair(std::string("kolo/elastic/4/assign/b:0#2"), std::string("1 2")));
  EXPECT_EQ(writes[2],
            std::make_pair(std::string("kolo/elastic/4/members"), std::string("a:0#0\nb:0#2\n")));
  // Last, so a worker that sees the round number finds its assignment.
  EXPECT_EQ(writes[3], std::make_pair(std::string("kolo/elastic/round"), std::string("4")));
}

TEST(ElasticRounds, FreeSlotsSkipTakenAndBlockedHosts) {
  const std::vector<HostSlots> pool{{"a", 2}, {"b", 2}, {"c", 1}};
  const auto none = [](const std::string&) { return false; };
  const auto free = slots_to_fill(pool, none, {{0, "a", 0}, {1, "b", 1}}, 10);
  EXPECT_EQ(free, (std::vector<std::pair<std::string, int>>{{"a", 1}, {"b", 0}, {"c", 0}}));
  EXPECT_EQ(slots_to_fill(pool, none, {}, 2).size(), 2u);
  EXPECT_TRUE(slots_to_fill(pool, none, {}, 0).empty());
  const auto not_b = [](const std::string& host) { return host == "b"; };
  EXPECT_EQ(slots_to_fill(pool, not_b, {{0, "a", 0}}, 10),
            (std::vector<std::pair<std::string, int>>{{"a", 1}, {"c", 0}}));
}

TEST(ElasticRounds, TargetIsCappedByMaxNp) {
  EXPECT_EQ(elastic_target(8, 0), 8);
  EXPECT_EQ(elastic_target(8, 5), 5);
  EXPECT_EQ(elastic_target(3, 5), 3);
}

TEST(MinSizeWatch, ExpiresOnlyAfterTheTimeoutBelowMinNp) {
  MinSizeWatch watch(3, 10s);
  EXPECT_EQ(watch.update(3, t0), MinSizeWatch::Verdict::enough);
  EXPECT_EQ(watch.update(2, t0 + 1s), MinSizeWatch::Verdict::waiting);
  EXPECT_EQ(watch.short_since(), t0 + 1s);
  EXPECT_EQ(watch.update(2, t0 + 10s), MinSizeWatch::Verdict::waiting);
  EXPECT_EQ(watch.update(4, t0 + 10500ms), MinSizeWatch::Verdict::enough);  // back: clock resets
  EXPECT_FALSE(watch.short_since().has_value());
  EXPECT_EQ(watch.update(1, t0 + 12s), MinSizeWatch::Verdict::waiting);
  EXPECT_EQ(watch.update(1, t0 + 22s), MinSizeWatch::Verdict::expired);
}

TEST(ElasticEndReason, ContinuesWhileEnoughOrSlotsCanComeBack) {
  const ElasticLimits limits{2, 600, 3};
  ElasticCensus census{3, 3, false, 3, MinSizeWatch::Verdict::enough, {"a:2", "b:1"}, {}};
  EXPECT_FALSE(elastic_end_reason(census, limits).has_value());
  census.available = 1;
  census.usable_slots = 1;
  census.min_size = MinSizeWatch::Verdict::waiting;
  census.slots_can_come_back = true;  // a discovery script may bring hosts back: wait
  EXPECT_FALSE(elastic_end_reason(census, limits).has_value());
  census.slots_can_come_back = false;
  census.usable_slots = 2;  // a free slot is left: a replacement starts there
  EXPECT_FALSE(elastic_end_reason(census, limits).has_value());
}

TEST(ElasticEndReason, NamesWhatEndsTheJob) {
  const ElasticLimits limits{2, 30, 3};
  ElasticCensus census{1, 1, true, 0, MinSizeWatch::Verdict::expired, {"a:2", "b:1"}, {"b"}};
  const auto expired = elastic_end_reason(census, limits);
  ASSERT_TRUE(expired.has_value());
  EXPECT_NE(expired->find("only 1 worker(s) available (hosts: a:2,b:1; blacklisted: b)"),
            std::string::npos)
      << *expired;
  EXPECT_NE(expired->find("--min-np 2 for longer than --elastic-timeout 30 s"), std::string::npos)
      << *expired;

  census.min_size = MinSizeWatch::Verdict::waiting;
  census.slots_can_come_back = false;
  const auto stranded = elastic_end_reason(census, limits);
  ASSERT_TRUE(stranded.has_value());
  EXPECT_NE(stranded->find("no slot can come back"), std::string::npos) << *stranded;

  census = {2, 2, false, 4, MinSizeWatch::Verdict::enough, {"a:2"}, {}};
  const auto resets = elastic_end_reason(census, limits);
  ASSERT_TRUE(resets.has_value());
  EXPECT_EQ(*resets, "4 resets exceed --reset-limit 3; ending the job");
  EXPECT_FALSE(elastic_end_reason(census, {2, 30, std::nullopt}).has_value());
}

TEST(ElasticExitPolicy, SuccessOfAMemberEndsTheJob) {
  using A = ElasticExitAction;
  EXPECT_EQ(elastic_exit_action({.success = true, .member = true}), A::job_finishes);
  EXPECT_EQ(elastic_exit_action({.success = true, .member = true, .removed = true}),
            A::left_normally);
  EXPECT_EQ(elastic_exit_action({.success = true, .member = false}), A::left_normally);
}

TEST(ElasticExitPolicy, FailuresBlacklistAndTheSurvivorsDecide) {
  using A = ElasticExitAction;
  EXPECT_EQ(elastic_exit_action({.member = true, .survivors_elsewhere = true}), A::member_lost);
  EXPECT_EQ(elastic_exit_action({.member = true, .survivors_elsewhere = false}), A::no_survivor);
  EXPECT_EQ(elastic_exit_action({.member = false, .survivors_elsewhere = true}),
            A::newcomer_failed);
  EXPECT_EQ(elastic_exit_action({.member = false, .removed = true, .dismissed = true}),
            A::dismissed_ended);
  // While kolorun stops the workers, or once the job is ending, no failure policy applies.
  EXPECT_EQ(elastic_exit_action({.member = true, .stopping = true, .ending = true}),
            A::logged_while_stopping);
  EXPECT_EQ(elastic_exit_action({.member = true, .ending = true, .survivors_elsewhere = true}),
            A::failure_while_ending);
  // A newcomer kolorun stopped because the job finished before it joined: no failure.
  EXPECT_EQ(elastic_exit_action({.removed = true, .dismissed = true, .ending = true}),
            A::dismissed_ended);
}

}  // namespace
}  // namespace kolo::launcher
