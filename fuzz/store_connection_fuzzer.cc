// The rendezvous server's side of one client connection (rendezvous/server_connection.h), as its
// poll loop drives it, fed with a client's byte stream. The first input byte chooses the client:
// odd, one that passed the real handshake (so the rest is framed requests: frame headers, then
// store requests); even, an unauthenticated one (the rest is its proof, then whatever follows).
// Each request is answered, as the server answers it, so pipelined requests are exercised. The
// connection must refuse garbage with a kolo::Error and never read past a failed handshake.
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include "fuzz/fuzz_support.h"
#include "rendezvous/server_connection.h"
#include "transport/tcp/auth.h"
#include "transport/tcp/socket.h"

namespace {

using namespace kolo;

const transport::Secret& secret() {
  static const transport::Secret value = transport::Secret::generate();
  return value;
}

void wait_readable(int fd) {
  pollfd entry{fd, POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&entry, 1, 60000);  // libFuzzer's -timeout alarm interrupts it (EINTR)
  } while (ready < 0 && errno == EINTR);
  if (ready != 1) {
    std::fprintf(stderr, "the client side of the handshake went silent\n");
    std::abort();
  }
}

// Runs the client's half of the real handshake against `connection`.
void authenticate(rendezvous::ServerConnection& connection, const transport::Socket& client) {
  std::thread client_side([&] {
    transport::authenticate_client(client, secret(), Deadline(std::chrono::seconds(10)), "server");
  });
  while (!connection.authenticated()) {
    wait_readable(connection.fd());
    if (!connection.on_readable()) std::abort();
  }
  if (!connection.flush()) std::abort();  // the server's proof
  client_side.join();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 16384) return 0;
  const bool authenticated_client = (data[0] & 1) != 0;
  ++data;
  --size;

  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
  transport::Socket server_end(fds[0]);
  transport::Socket client(fds[1]);
  transport::set_nonblocking(server_end, true);
  rendezvous::ServerConnection connection(std::move(server_end), "fuzz client", secret(),
                                          Clock::now() + std::chrono::seconds(10));
  if (!connection.flush()) std::abort();  // the greeting
  if (authenticated_client) authenticate(connection, client);

  transport::write_all(client, data, size, Deadline(std::chrono::seconds(10)), "fuzz");
  ::shutdown(client.fd(), SHUT_WR);

  // Drains the client's replies so they never fill the socket buffer.
  auto drain = [&] {
    char sink[4096];
    while (::recv(client.fd(), sink, sizeof(sink), MSG_DONTWAIT) > 0) {
    }
  };
  fuzz::refuses_cleanly([&] {
    for (;;) {
      const bool open = connection.on_readable();
      while (auto request = connection.next_request()) {
        fuzz::require(connection.authenticated(), "a request before the handshake");
        connection.reply(rendezvous::wire::Reply{});
        if (!connection.flush()) return;
        drain();
      }
      if (!open) return;
    }
  });
  return 0;
}
