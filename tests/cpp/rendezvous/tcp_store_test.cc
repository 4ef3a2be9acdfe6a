#include "rendezvous/tcp_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "rendezvous/store_protocol.h"
#include "transport/tcp/framing.h"
#include "transport/test_support.h"

namespace kolo::rendezvous {
namespace {

using namespace std::chrono_literals;
using kolo::testing::seconds_since;
using transport::Endpoint;
using transport::Secret;
using transport::Socket;

class TcpStoreTest : public ::testing::Test {
 protected:
  TcpStoreTest()
      : server_(std::make_unique<TcpStoreServer>("127.0.0.1", 0, secret_, log_.logger())) {}

  [[nodiscard]] Endpoint endpoint() const { return {"127.0.0.1", server_->port()}; }
  std::unique_ptr<TcpStore> client() { return std::make_unique<TcpStore>(endpoint(), secret_, 5s); }
  // A raw connection that has passed the handshake, for speaking the wire protocol by hand.
  Socket raw_authenticated() {
    Socket socket = transport::connect_tcp(endpoint(), Deadline(5s));
    transport::authenticate_client(socket, secret_, Deadline(5s), "server");
    return socket;
  }

  kolo::testing::LogCapture log_;
  Secret secret_ = Secret::generate();
  std::unique_ptr<TcpStoreServer> server_;
};

TEST_F(TcpStoreTest, SetGetAddWait) {
  auto store = client();
  store->set("a", "1");
  EXPECT_EQ(store->get("a", 1s), "1");
  store->set("a", "overwritten");
  EXPECT_EQ(store->get("a", 1s), "overwritten");
  store->set("empty", "");
  EXPECT_EQ(store->get("empty", 1s), "");
  const std::string binary("\0\xff\x01zero", 7);
  store->set("binary", binary);
  EXPECT_EQ(store->get("binary", 1s), binary);
  EXPECT_EQ(store->add("n", 3), 3);
  EXPECT_EQ(store->add("n", -10), -7);
  EXPECT_EQ(store->get("n", 1s), "-7");
  store->wait({"a", "n", "empty"}, 1s);
  store->wait({}, 0s);
  // Another client sees the same values.
  EXPECT_EQ(client()->get("binary", 1s), binary);
}

TEST_F(TcpStoreTest, LargeValueRoundTrips) {
  auto store = client();
  std::string big(8 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 + 7);
  store->set("big", big);
  EXPECT_EQ(client()->get("big", 5s), big);
}

TEST_F(TcpStoreTest, GetWaitsForASetFromAnotherClient) {
  auto waiter = client();
  auto setter = client();
  const auto start = std::chrono::steady_clock::now();
  std::thread later([&] {
    std::this_thread::sleep_for(150ms);
    setter->set("kolo/round0/addr/1", "10.0.0.1:5000");
  });
  EXPECT_EQ(waiter->get("kolo/round0/addr/1", 10s), "10.0.0.1:5000");
  EXPECT_GE(seconds_since(start), 0.14);
  later.join();
}

TEST_F(TcpStoreTest, WaitWakesOnAdd) {
  auto waiter = client();
  std::thread later([&] {
    std::this_thread::sleep_for(50ms);
    client()->add("joined", 1);
  });
  waiter->wait({"joined"}, 10s);
  later.join();
  EXPECT_EQ(waiter->add("joined", 0), 1);
}

TEST_F(TcpStoreTest, GetTimesOutNamingTheKeyAndTheConnectionStaysUsable) {
  auto store = client();
  const auto start = std::chrono::steady_clock::now();
  try {
    store->get("never/set", 200ms);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("'never/set'"), std::string::npos) << e.what();
  }
  EXPECT_GE(seconds_since(start), 0.19);
  EXPECT_LT(seconds_since(start), 3.0);
  store->set("after", "ok");
  EXPECT_EQ(store->get("after", 1s), "ok");
}

TEST_F(TcpStoreTest, WaitTimeoutNamesOnlyTheMissingKeys) {
  auto store = client();
  store->set("here", "1");
  try {
    store->wait({"here", "gone1", "gone2"}, 100ms);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'gone1', 'gone2'"), std::string::npos) << what;
    EXPECT_EQ(what.find("'here'"), std::string::npos) << what;
  }
}

TEST_F(TcpStoreTest, BadArgumentsAreRefusedAndTheConnectionStaysUsable) {
  auto store = client();
  store->set("text", "not a number");
  EXPECT_THROW(store->add("text", 1), InvalidArgument);
  EXPECT_THROW(store->set(std::string(wire::kMaxKeySize + 1, 'k'), "v"), InvalidArgument);
  EXPECT_THROW(store->set("k", std::string(wire::kMaxValueSize + 1, 'v')), InvalidArgument);
  store->set("still", "works");
  EXPECT_EQ(store->get("still", 1s), "works");
}

TEST_F(TcpStoreTest, WrongSecretClientIsRefusedAndLogged) {
  try {
    TcpStore intruder(endpoint(), Secret::generate(), 5s);
    FAIL() << "a client with the wrong secret was accepted";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("authentication"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(log_.wait_for("authentication of 127.0.0.1:")) << log_.text();
  EXPECT_NE(log_.text().find("WARNING"), std::string::npos);
  // The server carries on.
  auto store = client();
  store->set("k", "v");
  EXPECT_EQ(store->get("k", 1s), "v");
}

TEST_F(TcpStoreTest, ASilentConnectionDoesNotHoldUpOthers) {
  Socket silent = transport::connect_tcp(endpoint(), Deadline(5s));  // never authenticates
  const auto start = std::chrono::steady_clock::now();
  auto store = client();
  store->set("k", "v");
  EXPECT_EQ(store->get("k", 1s), "v");
  EXPECT_LT(seconds_since(start), 1.0);
}

TEST_F(TcpStoreTest, GarbageInsteadOfAHandshakeIsDroppedAndLogged) {
  Socket socket = transport::connect_tcp(endpoint(), Deadline(5s));
  const std::string request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(64, 'x');
  transport::write_all(socket, request.data(), request.size(), Deadline(5s), "server");
  std::array<char, 128> reply{};
  // The server sends its 40-byte greeting and then hangs up.
  EXPECT_THROW(transport::read_all(socket, reply.data(), reply.size(), Deadline(5s), "server"),
               PeerError);
  EXPECT_TRUE(log_.wait_for("dropped connection from 127.0.0.1:")) << log_.text();
}

TEST_F(TcpStoreTest, OversizedFrameIsRefusedBeforeBuffering) {
  Socket socket = raw_authenticated();
  std::byte header[transport::kFrameHeaderSize];
  transport::encode_frame_header(1ull << 40, header);
  transport::write_all(socket, header, sizeof(header), Deadline(5s), "server");
  char byte = 0;
  EXPECT_THROW(transport::read_all(socket, &byte, 1, Deadline(5s), "server"), PeerError);
  EXPECT_TRUE(log_.wait_for("over the limit")) << log_.text();
}

TEST_F(TcpStoreTest, MalformedRequestsAreRefused) {
  {
    // A key length pointing past the end of the frame.
    Socket socket = raw_authenticated();
    const std::string payload("\x01\x10\x00\x00\x00", 5);
    transport::write_frame(socket, payload, Deadline(5s), "server");
    char byte = 0;
    EXPECT_THROW(transport::read_all(socket, &byte, 1, Deadline(5s), "server"), PeerError);
  }
  {
    // A well-formed frame with an unknown request type.
    Socket socket = raw_authenticated();
    transport::write_frame(socket, "\x7f", Deadline(5s), "server");
    char byte = 0;
    EXPECT_THROW(transport::read_all(socket, &byte, 1, Deadline(5s), "server"), PeerError);
  }
  EXPECT_TRUE(log_.wait_for("unknown request type 127")) << log_.text();
  EXPECT_TRUE(log_.wait_for("truncated")) << log_.text();
  {
    // A key over the limit is refused from its length alone.
    Socket socket = raw_authenticated();
    const std::string payload("\x02\x00\x00\x00\x01", 5);  // get, key of 16 MiB
    transport::write_frame(socket, payload, Deadline(5s), "server");
    char byte = 0;
    EXPECT_THROW(transport::read_all(socket, &byte, 1, Deadline(5s), "server"), PeerError);
  }
  EXPECT_TRUE(log_.wait_for("key of 16777216 bytes is over the limit")) << log_.text();
}

TEST_F(TcpStoreTest, ManyConcurrentClients) {
  constexpr int kClients = 32;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      try {
        auto store = client();
        store->set("rank/" + std::to_string(i), std::to_string(i * i));
        store->add("arrived", 1);
        std::vector<std::string> all;
        for (int j = 0; j < kClients; ++j) all.push_back("rank/" + std::to_string(j));
        store->wait(all, 20s);
        for (int j = 0; j < kClients; ++j) {
          if (store->get("rank/" + std::to_string(j), 1s) != std::to_string(j * j)) ++failures;
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "client " << i << ": " << e.what();
        ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(client()->add("arrived", 0), kClients);
}

TEST_F(TcpStoreTest, ServerShutdownWakesAParkedClientWithAPeerError) {
  auto store = client();
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    server_.reset();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(store->get("never", 30s), PeerError);
  EXPECT_LT(seconds_since(start), 5.0);
  stopper.join();
  // Every later request fails the same way instead of hanging.
  EXPECT_THROW(store->set("k", "v"), PeerError);
}

TEST(TcpStore, ConnectTimesOutWhenNoServerListens) {
  Socket probe = transport::listen_tcp("127.0.0.1", 0);
  const Endpoint nowhere{"127.0.0.1", transport::local_port(probe)};
  probe.reset();
  const auto start = std::chrono::steady_clock::now();
  try {
    TcpStore store(nowhere, Secret::generate(), 300ms);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find(nowhere.to_string()), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(start), 3.0);
}

TEST(TcpStore, ServerStartsAndStopsQuickly) {
  Logger quiet(LogLevel::off);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    TcpStoreServer server("127.0.0.1", 0, Secret::generate(), quiet);
    EXPECT_GT(server.port(), 0);
  }
  EXPECT_LT(seconds_since(start), 2.0);
}

}  // namespace
}  // namespace kolo::rendezvous
