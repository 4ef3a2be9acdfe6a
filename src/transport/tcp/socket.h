// The few socket calls kolo needs on owned descriptors (base/unique_fd.h), each failing with a
// SystemError that names the call, errno and the address involved.
#pragma once

#include <cstdint>
#include <string>

#include "base/clock.h"
#include "base/unique_fd.h"

namespace kolo::transport {

// A socket is an owned descriptor like any other.
using Socket = UniqueFd;

struct Endpoint {
  std::string host;  // numeric address or resolvable name
  uint16_t port = 0;
  // "host:port", with an IPv6 address in brackets ("[::1]:80") so parse() reads it back.
  [[nodiscard]] std::string to_string() const {
    const bool ipv6 = host.find(':') != std::string::npos;
    return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  }
  // Parses "host:port" or "[ipv6]:port"; throws InvalidArgument.
  static Endpoint parse(const std::string& text);
};

// Listens on `bind_host` (empty: all interfaces, IPv4 and IPv6) at `port` (0: any free port).
// The listener is non-blocking and close-on-exec; accept with accept_tcp.
Socket listen_tcp(const std::string& bind_host, uint16_t port, int backlog = 128);
uint16_t local_port(const Socket& socket);
// "address:port" of the other end of a connected socket, for log and error messages; "unknown peer"
// if the socket has none.
std::string peer_address(const Socket& socket);
// Connects, retrying refused connections until the deadline (the peer may not listen yet); throws
// TimeoutError naming the endpoint. The returned socket is blocking and close-on-exec.
Socket connect_tcp(const Endpoint& endpoint, Deadline deadline);
// Waits for one connection until the deadline; returns an invalid Socket on timeout. The accepted
// socket is blocking and close-on-exec.
Socket accept_tcp(const Socket& listener, Deadline deadline);
// Low-latency, non-blocking, close-on-exec settings used for every data connection.
void set_nodelay(const Socket& socket);
void set_nonblocking(const Socket& socket, bool nonblocking);

// Blocking helpers for handshakes (before a socket becomes a Link): the whole buffer or throw
// (TimeoutError at the deadline, PeerError on EOF or a broken connection). `who` names the peer in
// messages. They work on blocking and non-blocking sockets alike and never raise SIGPIPE.
void write_all(const Socket& socket, const void* data, size_t size, Deadline deadline,
               const std::string& who);
void read_all(const Socket& socket, void* data, size_t size, Deadline deadline,
              const std::string& who);

}  // namespace kolo::transport
