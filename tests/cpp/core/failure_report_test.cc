// What a surviving rank's error says about a peer that stopped responding: the chain of published
// waits leads to the rank at its end, named with its host as the transport names the peer it lost.
#include "core/failure_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rendezvous/in_memory_store.h"

namespace kolo::core {
namespace {

const std::vector<std::string> kHosts = {"ns1", "ns2", "ns3"};

PeerError silent_peer(int peer) {
  return {peer, "no progress from rank " + std::to_string(peer), PeerError::Kind::silent};
}

TEST(FailureReportTest, ChainEndIsNamedWithItsHost) {
  rendezvous::InMemoryStore store;
  const Logger logger(LogLevel::error);
  // Rank 0 timed out on rank 1 and published it; rank 1 (stopped) published nothing.
  store.set("kolo/round0/stuck/0", "1");
  const FailureReport report(&store, 0, 2, 3, logger, "kolo/failure", kHosts);
  const std::string message = report.with_root_cause(silent_peer(0));
  EXPECT_NE(message.find("chain 0 -> 1"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1 on host 'ns2' is the one not responding"), std::string::npos)
      << message;
  // This rank published whom it waited on, for the others' chains.
  EXPECT_EQ(store.get("kolo/round0/stuck/2", Duration::zero()), "0");
}

TEST(FailureReportTest, SilentPeerAtTheEndIsNamedWithItsHost) {
  rendezvous::InMemoryStore store;
  const Logger logger(LogLevel::error);
  const FailureReport report(&store, 4, 0, 3, logger, "kolo/failure", kHosts);
  const std::string message = report.with_root_cause(silent_peer(2));
  EXPECT_NE(message.find("rank 2 on host 'ns3' is alive but not responding"), std::string::npos)
      << message;
}

// What rank `rank` of `size` says on timing out on `peer`, after rank `published`
// published that it waits on `awaited`.
std::string message_after_one_wait(int rank, int size, int peer, int published, int awaited,
                                   const std::vector<std::string>& hosts) {
  rendezvous::InMemoryStore store;
  const Logger logger(LogLevel::error);
  store.set("kolo/round0/stuck/" + std::to_string(published), std::to_string(awaited));
  const FailureReport report(&store, 0, rank, size, logger, "kolo/failure", hosts);
  return report.with_root_cause(silent_peer(peer));
}

TEST(FailureReportTest, WithoutHostsRanksAreNamedAlone) {
  const std::string message = message_after_one_wait(2, 3, 0, 0, 1, {});
  EXPECT_NE(message.find(": rank 1 is the one not responding"), std::string::npos) << message;
}

TEST(FailureReportTest, CycleIsReported) {
  const std::string message = message_after_one_wait(0, 2, 1, 1, 0, kHosts);
  EXPECT_NE(message.find("wait on each other in a cycle"), std::string::npos) << message;
}

}  // namespace
}  // namespace kolo::core
