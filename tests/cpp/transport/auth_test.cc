#include "transport/tcp/auth.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <future>
#include <set>
#include <string>

#include "base/errors.h"
#include "transport/tcp/socket_link.h"
#include "transport/test_support.h"

namespace kolo::transport {
namespace {

using namespace std::chrono_literals;
using kolo::testing::seconds_since;

const std::string kHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

struct Connected {
  Socket client;
  Socket server;
};

Connected connect_loopback() {
  Socket listener = listen_tcp("127.0.0.1", 0);
  Socket client = connect_tcp({"127.0.0.1", local_port(listener)}, Deadline(5s));
  Socket server = accept_tcp(listener, Deadline(5s));
  return {std::move(client), std::move(server)};
}

// Runs `body` on a thread and returns its exception (or nullptr), bounded by the futures' wait.
std::future<void> run_async(std::function<void()> body) {
  return std::async(std::launch::async, std::move(body));
}

std::string message_of(std::future<void>& result) {
  try {
    result.get();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Secret, HexRoundTripsAndGeneratesFreshValues) {
  EXPECT_EQ(Secret::from_hex(kHex).to_hex(), kHex);
  std::string upper = kHex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(Secret::from_hex(upper).to_hex(), kHex);
  std::set<std::string> seen;
  for (int i = 0; i < 8; ++i) seen.insert(Secret::generate().to_hex());
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_EQ(Secret::generate().to_hex().size(), 64u);
}

TEST(Secret, RejectsBadHexWithoutEchoingIt) {
  EXPECT_THROW(Secret::from_hex(""), InvalidArgument);
  EXPECT_THROW(Secret::from_hex(kHex.substr(1)), InvalidArgument);
  EXPECT_THROW(Secret::from_hex(kHex + "0"), InvalidArgument);
  const std::string bad = kHex.substr(0, 63) + "g";
  try {
    Secret::from_hex(bad);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()).find(kHex.substr(0, 16)), std::string::npos) << e.what();
  }
}

TEST(Auth, SucceedsBothWaysAndLeavesTheStreamAligned) {
  const Secret secret = Secret::generate();
  Connected c = connect_loopback();
  auto server = run_async([&] {
    authenticate_server(c.server, secret, Deadline(5s), "client");
    char got[5] = {};
    read_all(c.server, got, 5, Deadline(5s), "client");
    EXPECT_STREQ(got, "data");
  });
  authenticate_client(c.client, secret, Deadline(5s), "server");
  write_all(c.client, "data", 5, Deadline(5s), "server");
  EXPECT_EQ(message_of(server), "");
}

TEST(Auth, ServerReadsNothingBeyondTheProof) {
  // The client's first data bytes arrive together with its proof; the server must leave them.
  const Secret secret = Secret::generate();
  auto [client_end, test_end] = socket_pair();
  auto client = run_async([&] { authenticate_client(client_end, secret, Deadline(5s), "s"); });
  ServerHandshake handshake(secret);
  write_all(test_end, handshake.greeting().data(), kGreetingSize, Deadline(5s), "c");
  std::array<uint8_t, kClientProofSize> proof{};
  read_all(test_end, proof.data(), proof.size(), Deadline(5s), "c");
  const auto server_proof = handshake.verify(proof, "c");
  write_all(test_end, server_proof.data(), server_proof.size(), Deadline(5s), "c");
  EXPECT_EQ(message_of(client), "");
}

TEST(Auth, WrongSecretIsRefusedOnBothSides) {
  const Secret server_secret = Secret::generate();
  const Secret client_secret = Secret::generate();
  Connected c = connect_loopback();
  auto server = run_async([&] {
    authenticate_server(c.server, server_secret, Deadline(5s), "client 127.0.0.1:1111");
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    authenticate_client(c.client, client_secret, Deadline(5s), "rank 0 (127.0.0.1:2222)");
    FAIL() << "client accepted a server with another secret";
  } catch (const ProtocolError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("authentication"), std::string::npos) << what;
    EXPECT_NE(what.find("failed"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0 (127.0.0.1:2222)"), std::string::npos) << what;
    EXPECT_EQ(what.find(client_secret.to_hex()), std::string::npos);
  }
  EXPECT_LT(seconds_since(start), 2.0);  // refused at once, not at the deadline
  try {
    server.get();
    FAIL() << "server accepted a client with another secret";
  } catch (const ProtocolError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("authentication"), std::string::npos) << what;
    EXPECT_NE(what.find("failed"), std::string::npos) << what;
    EXPECT_NE(what.find("client 127.0.0.1:1111"), std::string::npos) << what;
    EXPECT_EQ(what.find(server_secret.to_hex()), std::string::npos);
  }
}

TEST(Auth, ClientRefusesAServerThatCannotProveTheSecret) {
  // An impostor server: a well-formed greeting, then a made-up proof.
  const Secret secret = Secret::generate();
  auto [client_end, test_end] = socket_pair();
  auto client = run_async([&] { authenticate_client(client_end, secret, Deadline(5s), "imp"); });
  ServerHandshake impostor(Secret::generate());
  write_all(test_end, impostor.greeting().data(), kGreetingSize, Deadline(5s), "c");
  std::array<uint8_t, kClientProofSize> proof{};
  read_all(test_end, proof.data(), proof.size(), Deadline(5s), "c");
  std::array<uint8_t, kServerProofSize> fake{};
  fake.fill(0x5a);
  write_all(test_end, fake.data(), fake.size(), Deadline(5s), "c");
  const std::string what = message_of(client);
  EXPECT_NE(what.find("authentication of imp failed"), std::string::npos) << what;
}

TEST(Auth, ClientRefusesAGreetingThatIsNotKolo) {
  auto [client_end, test_end] = socket_pair();
  auto client = run_async(
      [&] { authenticate_client(client_end, Secret::generate(), Deadline(5s), "web server"); });
  const std::string http = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
  write_all(test_end, http.data(), http.size(), Deadline(5s), "c");
  try {
    client.get();
    FAIL() << "expected ProtocolError";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("web server"), std::string::npos) << e.what();
  }
}

TEST(Auth, ServerRefusesGarbageProof) {
  auto [server_end, test_end] = socket_pair();
  auto server = run_async(
      [&] { authenticate_server(server_end, Secret::generate(), Deadline(5s), "scanner"); });
  std::array<uint8_t, kGreetingSize> greeting{};
  read_all(test_end, greeting.data(), greeting.size(), Deadline(5s), "s");
  std::array<uint8_t, kClientProofSize> garbage{};
  garbage.fill(0xab);
  write_all(test_end, garbage.data(), garbage.size(), Deadline(5s), "s");
  EXPECT_THROW(server.get(), ProtocolError);
  // The refused client gets nothing back but the closed stream.
  char byte = 0;
  EXPECT_THROW(read_all(test_end, &byte, 1, Deadline(5s), "s"), PeerError);
}

TEST(Auth, ServerRefusesAShortHandshake) {
  auto [server_end, test_end] = socket_pair();
  auto server = run_async(
      [&] { authenticate_server(server_end, Secret::generate(), Deadline(5s), "short"); });
  std::array<uint8_t, kGreetingSize> greeting{};
  read_all(test_end, greeting.data(), greeting.size(), Deadline(5s), "s");
  write_all(test_end, "0123456789", 10, Deadline(5s), "s");
  test_end.reset();
  try {
    server.get();
    FAIL() << "expected ProtocolError";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("authentication with short failed"), std::string::npos)
        << e.what();
  }
}

TEST(Auth, ClientThatHangsUpAtOnceIsAProtocolError) {
  auto [server_end, test_end] = socket_pair();
  test_end.reset();
  try {
    authenticate_server(server_end, Secret::generate(), Deadline(5s), "gone");
    FAIL() << "expected ProtocolError";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("authentication with gone failed"), std::string::npos)
        << e.what();
  }
}

TEST(Auth, SilentClientTimesOut) {
  Connected c = connect_loopback();  // the client connects and never says anything
  const auto start = std::chrono::steady_clock::now();
  try {
    authenticate_server(c.server, Secret::generate(), Deadline(200ms), "silent client");
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("silent client"), std::string::npos) << e.what();
  }
  EXPECT_GE(seconds_since(start), 0.19);
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST(Auth, SilentServerTimesOut) {
  Connected c = connect_loopback();
  EXPECT_THROW(authenticate_client(c.client, Secret::generate(), Deadline(200ms), "mute"),
               TimeoutError);
}

TEST(Auth, ARecordedProofCannotBeReplayed) {
  const Secret secret = Secret::generate();
  auto [client_end, test_end] = socket_pair();
  auto client = run_async([&] { authenticate_client(client_end, secret, Deadline(5s), "s"); });
  ServerHandshake first(secret);
  write_all(test_end, first.greeting().data(), kGreetingSize, Deadline(5s), "c");
  std::array<uint8_t, kClientProofSize> recorded{};
  read_all(test_end, recorded.data(), recorded.size(), Deadline(5s), "c");
  const auto reply = first.verify(recorded, "c");
  write_all(test_end, reply.data(), reply.size(), Deadline(5s), "c");
  EXPECT_EQ(message_of(client), "");
  // Another connection draws a fresh nonce, so the same proof no longer fits.
  ServerHandshake second(secret);
  EXPECT_THROW((void)second.verify(recorded, "replayer"), ProtocolError);
}

}  // namespace
}  // namespace kolo::transport
