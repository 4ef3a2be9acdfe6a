#include "transport/tcp/socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "transport/refusing_port.h"
#include "transport/tcp/socket_link.h"
#include "transport/test_support.h"

namespace kolo::transport {
namespace {

using namespace std::chrono_literals;
using kolo::testing::seconds_since;

// A loopback port free a moment ago, for a test whose own listener takes it later (a test that
// needs the port to stay refused uses testing::RefusingPort).
uint16_t closed_port() {
  Socket probe = listen_tcp("127.0.0.1", 0);
  return local_port(probe);
}

struct Connected {
  Socket client;
  Socket server;
};

Connected connect_loopback(const std::string& host = "127.0.0.1") {
  Socket listener = listen_tcp(host, 0);
  Socket client = connect_tcp({host, local_port(listener)}, Deadline(5s));
  Socket server = accept_tcp(listener, Deadline(5s));
  return {std::move(client), std::move(server)};
}

TEST(Endpoint, ParsesHostAndPort) {
  Endpoint e = Endpoint::parse("127.0.0.1:8080");
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 8080);
  e = Endpoint::parse("node-7.cluster:0");
  EXPECT_EQ(e.host, "node-7.cluster");
  EXPECT_EQ(e.port, 0);
  e = Endpoint::parse("host:65535");
  EXPECT_EQ(e.port, 65535);
}

TEST(Endpoint, ParsesBracketedIpv6AndRoundTrips) {
  const Endpoint e = Endpoint::parse("[::1]:4000");
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.port, 4000);
  EXPECT_EQ(e.to_string(), "[::1]:4000");
  EXPECT_EQ(Endpoint::parse(e.to_string()).host, "::1");
  EXPECT_EQ((Endpoint{"10.0.0.2", 99}).to_string(), "10.0.0.2:99");
}

TEST(Endpoint, RejectsMalformedText) {
  for (const char* bad : {"", "host", "host:", ":80", "host:abc", "host:70000", "host:-1",
                          "host:80x", "::1:80", "[::1]80", "[::1", "[]:80"}) {
    EXPECT_THROW(Endpoint::parse(bad), InvalidArgument) << "'" << bad << "'";
  }
  try {
    Endpoint::parse("host:http");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("host:http"), std::string::npos) << e.what();
  }
}

TEST(Socket, MoveTransfersOwnershipAndResetCloses) {
  auto [a, b] = socket_pair();
  const int fd = a.fd();
  Socket moved(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(moved.fd(), fd);
  moved.reset();
  EXPECT_FALSE(moved.valid());
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
  EXPECT_EQ(errno, EBADF);
  const int released = b.release();
  EXPECT_FALSE(b.valid());
  EXPECT_GE(::fcntl(released, F_GETFD), 0);  // still open: release gave it away
  Socket owner(released);
}

TEST(Socket, ListenConnectAcceptOnLoopback) {
  Socket listener = listen_tcp("127.0.0.1", 0);
  const uint16_t port = local_port(listener);
  ASSERT_GT(port, 0);
  Socket client = connect_tcp({"127.0.0.1", port}, Deadline(5s));
  Socket server = accept_tcp(listener, Deadline(5s));
  ASSERT_TRUE(client.valid());
  ASSERT_TRUE(server.valid());
  EXPECT_EQ(peer_address(server).rfind("127.0.0.1:", 0), 0u) << peer_address(server);
  EXPECT_EQ(peer_address(client), "127.0.0.1:" + std::to_string(port));

  // Every descriptor kolo opens is close-on-exec, so spawned processes do not inherit them.
  for (const Socket* s : {&listener, &client, &server}) {
    EXPECT_TRUE(::fcntl(s->fd(), F_GETFD) & FD_CLOEXEC);
  }
  // Connected sockets come back blocking; the listener is non-blocking.
  EXPECT_FALSE(::fcntl(client.fd(), F_GETFL) & O_NONBLOCK);
  EXPECT_FALSE(::fcntl(server.fd(), F_GETFL) & O_NONBLOCK);
  EXPECT_TRUE(::fcntl(listener.fd(), F_GETFL) & O_NONBLOCK);

  const char ping[] = "ping";
  char got[sizeof(ping)] = {};
  write_all(client, ping, sizeof(ping), Deadline(5s), "server");
  read_all(server, got, sizeof(got), Deadline(5s), "client");
  EXPECT_STREQ(got, "ping");
  write_all(server, "pong", 5, Deadline(5s), "client");
  read_all(client, got, 5, Deadline(5s), "server");
  EXPECT_STREQ(got, "pong");
}

TEST(Socket, ListenOnAllInterfacesAcceptsLoopbackAndLocalhostByName) {
  Socket listener = listen_tcp("", 0);
  const uint16_t port = local_port(listener);
  Socket by_address = connect_tcp({"127.0.0.1", port}, Deadline(5s));
  Socket accepted = accept_tcp(listener, Deadline(5s));
  ASSERT_TRUE(accepted.valid());
  // An IPv4 peer of the dual-stack listener is named by its IPv4 address.
  EXPECT_EQ(peer_address(accepted), "127.0.0.1:" + std::to_string(local_port(by_address)));
  Socket by_name = connect_tcp({"localhost", port}, Deadline(5s));
  EXPECT_TRUE(accept_tcp(listener, Deadline(5s)).valid());
}

TEST(Socket, ListenOnTakenPortFailsNamingIt) {
  Socket first = listen_tcp("127.0.0.1", 0);
  const uint16_t port = local_port(first);
  try {
    Socket second = listen_tcp("127.0.0.1", port);
    FAIL() << "expected SystemError";
  } catch (const SystemError& e) {
    EXPECT_EQ(e.error_code(), EADDRINUSE);
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
  }
}

TEST(Socket, ConnectRetriesUntilTheListenerAppears) {
  const uint16_t port = closed_port();
  std::thread late_listener([port] {
    std::this_thread::sleep_for(300ms);
    Socket listener = listen_tcp("127.0.0.1", port);
    EXPECT_TRUE(accept_tcp(listener, Deadline(5s)).valid());
  });
  const auto start = std::chrono::steady_clock::now();
  Socket client = connect_tcp({"127.0.0.1", port}, Deadline(10s));
  EXPECT_TRUE(client.valid());
  EXPECT_GE(seconds_since(start), 0.25);
  late_listener.join();
}

TEST(Socket, ConnectTimesOutNamingTheEndpoint) {
  const testing::RefusingPort closed;
  const uint16_t port = closed.port();
  const auto start = std::chrono::steady_clock::now();
  try {
    connect_tcp({"127.0.0.1", port}, Deadline(300ms));
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos) << e.what();
  }
  const double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 0.25);
  EXPECT_LT(elapsed, 2.0);
}

TEST(Socket, AcceptReturnsInvalidSocketAtTheDeadline) {
  Socket listener = listen_tcp("127.0.0.1", 0);
  const auto start = std::chrono::steady_clock::now();
  Socket none = accept_tcp(listener, Deadline(150ms));
  EXPECT_FALSE(none.valid());
  EXPECT_GE(seconds_since(start), 0.14);
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST(Socket, ReadTimesOutNamingThePeer) {
  auto [a, b] = socket_pair();
  char buffer[4];
  const auto start = std::chrono::steady_clock::now();
  try {
    read_all(a, buffer, sizeof(buffer), Deadline(150ms), "rank 3");
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST(Socket, ReadOfClosedStreamIsPeerErrorNamingThePeer) {
  auto [a, b] = socket_pair();
  write_all(b, "ab", 2, Deadline(1s), "a");
  b.reset();
  char buffer[4];
  try {
    read_all(a, buffer, sizeof(buffer), Deadline(5s), "rank 5");
    FAIL() << "expected PeerError";
  } catch (const PeerError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2 of 4"), std::string::npos) << e.what();
  }
}

TEST(Socket, WriteHonoursTheDeadlineOnABlockingSocket) {
  auto [a, b] = socket_pair();  // blocking; b never reads, so the buffers fill up
  std::vector<char> big(64 << 20, 'x');
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(write_all(a, big.data(), big.size(), Deadline(200ms), "slow reader"), TimeoutError);
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST(Socket, WriteToClosedPeerIsPeerErrorNotSigpipe) {
  auto [a, b] = socket_pair();
  b.reset();
  EXPECT_THROW(write_all(a, "x", 1, Deadline(1s), "gone"), PeerError);
}

TEST(Socket, ReadAndWriteWorkOnNonBlockingSockets) {
  Connected c = connect_loopback();
  set_nonblocking(c.client, true);
  set_nonblocking(c.server, true);
  EXPECT_TRUE(::fcntl(c.client.fd(), F_GETFL) & O_NONBLOCK);
  std::vector<char> sent(4 << 20);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>(i * 7);
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);  // the reader waits in poll first
    write_all(c.client, sent.data(), sent.size(), Deadline(10s), "server");
  });
  std::vector<char> received(sent.size());
  read_all(c.server, received.data(), received.size(), Deadline(10s), "client");
  writer.join();
  EXPECT_EQ(received, sent);
  set_nonblocking(c.client, false);
  EXPECT_FALSE(::fcntl(c.client.fd(), F_GETFL) & O_NONBLOCK);
}

TEST(Socket, NodelayIsSetOnTcpAndHarmlessOnUnixSockets) {
  Connected c = connect_loopback();
  set_nodelay(c.client);
  int value = 0;
  socklen_t length = sizeof(value);
  ASSERT_EQ(::getsockopt(c.client.fd(), IPPROTO_TCP, TCP_NODELAY, &value, &length), 0);
  EXPECT_NE(value, 0);
  auto [a, b] = socket_pair();
  EXPECT_NO_THROW(set_nodelay(a));
}

}  // namespace
}  // namespace kolo::transport
