#include "bootstrap/peer_wait.h"

#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"
#include "rendezvous/in_memory_store.h"
#include "rendezvous/keys.h"

namespace kolo::bootstrap {
namespace {

using namespace std::chrono_literals;

constexpr const char* kKey = "kolo/round0/host/1";
constexpr const char* kServer = "10.0.0.1:4000";

std::string failure_of(rendezvous::Store& store, Duration timeout) {
  try {
    (void)await_peer_key(store, kKey, 1, timeout, kServer);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the wait returned";
  return "";
}

TEST(AwaitPeerKey, ReturnsWhatThePeerPublished) {
  rendezvous::InMemoryStore store;
  store.set(kKey, "node2");
  EXPECT_EQ(await_peer_key(store, kKey, 1, 5s, kServer), "node2");
}

TEST(AwaitPeerKey, ALauncherReportEndsTheWaitNamingTheRankAndHowItEnded) {
  rendezvous::InMemoryStore store;
  store.set(std::string(rendezvous::kFailureKey),
            "rank 1 (host b) was killed by signal SIGKILL (9)");
  // A wait far longer than the test: the report must end it, not the timeout.
  try {
    (void)await_peer_key(store, kKey, 1, 600s, kServer);
    FAIL() << "the wait returned";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.peer_rank(), 1);
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 did not join"), std::string::npos) << what;
    EXPECT_NE(what.find("was killed by signal SIGKILL"), std::string::npos) << what;
  }
}

TEST(AwaitPeerKey, TimeoutNamesTheRankItsPlannedHostTheKeyAndTheServer) {
  rendezvous::InMemoryStore store;
  store.set(std::string(rendezvous::kPlannedHostsKey), "nodeA\nnodeB\nnodeC\n");
  const std::string what = failure_of(store, 50ms);
  EXPECT_NE(what.find("rank 1 on host 'nodeB' did not join"), std::string::npos) << what;
  EXPECT_NE(what.find(kKey), std::string::npos) << what;
  EXPECT_NE(what.find(kServer), std::string::npos) << what;
}

TEST(AwaitPeerKey, WithoutAPlanTheTimeoutNamesTheRankAlone) {
  rendezvous::InMemoryStore store;
  const std::string what = failure_of(store, 50ms);
  EXPECT_NE(what.find("rank 1 did not join"), std::string::npos) << what;
}

TEST(AwaitPeerKey, AShortPlanNamesNoHost) {
  rendezvous::InMemoryStore store;
  store.set(std::string(rendezvous::kPlannedHostsKey), "nodeA\n");
  const std::string what = failure_of(store, 50ms);
  EXPECT_NE(what.find("rank 1 did not join"), std::string::npos) << what;
}

}  // namespace
}  // namespace kolo::bootstrap
