// A rank of another negotiation protocol version fails bootstrap with an error naming both
// versions. The other rank here is the test itself, speaking to the real rendezvous server as an
// older kolo would: it publishes its host and address, and no version or an old one.
#include <gtest/gtest.h>

#include <future>

#include "base/errors.h"
#include "bootstrap/bootstrap.h"
#include "core/bootstrap_options.h"
#include "core/config.h"
#include "negotiation/wire.h"
#include "rendezvous/in_memory_store.h"
#include "rendezvous/peer_version.h"
#include "rendezvous/tcp_store.h"

namespace kolo::core {
namespace {

// Rank 0 of a 2-rank job bootstraps on a thread while `peer` plays rank 1; returns rank 0's
// error ("" when bootstrap got past the version check and on to connecting, which fails later).
std::string bootstrap_against(const std::function<void(rendezvous::Store&)>& peer) {
  Logger logger(LogLevel::error);
  const transport::Secret secret = transport::Secret::generate();
  rendezvous::TcpStoreServer server("127.0.0.1", 0, secret, logger);
  bootstrap::LaunchInfo launch;
  launch.rank = 0;
  launch.size = 2;
  launch.hostname = "testhost";
  launch.rendezvous_addr = "127.0.0.1";
  launch.rendezvous_port = server.port();
  launch.secret_hex = secret.to_hex();
  Config config;
  config.start_timeout = std::chrono::seconds(20);
  config.shm_disable = true;
  auto rank0 = std::async(std::launch::async, [&]() -> std::string {
    try {
      (void)bootstrap::connect_world(launch, bootstrap_options(config), 0, logger);
      return "bootstrap succeeded";
    } catch (const ProtocolError& error) {
      return error.what();
    } catch (const Error& error) {
      return std::string("other error: ") + error.what();
    }
  });
  rendezvous::TcpStore store({"127.0.0.1", server.port()}, secret, std::chrono::seconds(20));
  peer(store);
  return rank0.get();
}

TEST(BootstrapVersionTest, PeerWithoutAVersionIsAnOlderKolo) {
  const std::string error = bootstrap_against([](rendezvous::Store& store) {
    store.set("kolo/round0/host/1", "testhost");
    store.set("kolo/round0/addr/1", "127.0.0.1:1");
  });
  const std::string mine = std::to_string(negotiation::kWireVersion);
  const std::string older = std::to_string(negotiation::kWireVersion - 1);
  EXPECT_NE(error.find("rank 0: rank 1 published no negotiation protocol version"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("version " + older + " or earlier"), std::string::npos) << error;
  EXPECT_NE(error.find("this rank speaks version " + mine), std::string::npos) << error;
}

TEST(BootstrapVersionTest, PeerOfAnotherVersionIsNamedWithBothVersions) {
  const std::string error = bootstrap_against([](rendezvous::Store& store) {
    store.set("kolo/round0/protocol/1", "2");
    store.set("kolo/round0/host/1", "testhost");
    store.set("kolo/round0/addr/1", "127.0.0.1:1");
  });
  EXPECT_NE(error.find("rank 0: rank 1 speaks negotiation protocol version 2, this rank speaks "
                       "version " +
                       std::to_string(negotiation::kWireVersion)),
            std::string::npos)
      << error;
}

TEST(PeerVersionTest, SameVersionPassesAndGarbageIsNamed) {
  rendezvous::InMemoryStore store;
  rendezvous::publish_version(store, "v/1", 7);
  EXPECT_NO_THROW(rendezvous::check_peer_version(store, "v/1", 0, 1, 7, "test protocol"));
  store.set("v/2", "seven");
  try {
    rendezvous::check_peer_version(store, "v/2", 0, 2, 7, "test protocol");
    FAIL() << "a non-number version should be refused";
  } catch (const ProtocolError& error) {
    EXPECT_NE(std::string(error.what()).find("'seven'"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace kolo::core
