// Socket ownership, endpoint parsing and the small per-socket settings.
#include "transport/tcp/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "base/errors.h"
#include "transport/tcp/socket_internal.h"

namespace kolo::transport {

Endpoint Endpoint::parse(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("bad endpoint '" + text + "': " + why +
                           " (expected host:port or [ipv6]:port)");
  };
  std::string host;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos) throw bad("missing ']'");
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') throw bad("missing ':port'");
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) throw bad("missing ':port'");
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) throw bad("an IPv6 address must be in brackets");
  }
  if (host.empty()) throw bad("empty host");
  unsigned value = 0;
  const char* first = port_text.data();
  const char* last = first + port_text.size();
  auto [end, error] = std::from_chars(first, last, value);
  if (port_text.empty() || error != std::errc() || end != last || value > 65535) {
    throw bad("port must be a number from 0 to 65535");
  }
  return Endpoint{host, static_cast<uint16_t>(value)};
}

uint16_t local_port(const Socket& socket) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw SystemError("getsockname", errno, "local port of socket " + std::to_string(socket.fd()));
  }
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  }
  throw InvalidArgument("local_port: socket " + std::to_string(socket.fd()) +
                        " is not an IPv4 or IPv6 socket");
}

std::string peer_address(const Socket& socket) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getpeername(socket.fd(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return "unknown peer";
  }
  return detail::format_sockaddr(reinterpret_cast<const sockaddr*>(&address), length);
}

void set_nodelay(const Socket& socket) {
  int on = 1;
  if (::setsockopt(socket.fd(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) != 0) {
    // Not a TCP socket (e.g. an AF_UNIX pair in tests): there is no Nagle delay to turn off.
    if (errno == EOPNOTSUPP || errno == ENOPROTOOPT) return;
    throw SystemError("setsockopt(TCP_NODELAY)", errno, "socket " + std::to_string(socket.fd()));
  }
}

void set_nonblocking(const Socket& socket, bool nonblocking) {
  const int flags = ::fcntl(socket.fd(), F_GETFL);
  if (flags < 0) {
    throw SystemError("fcntl(F_GETFL)", errno, "socket " + std::to_string(socket.fd()));
  }
  const int wanted = nonblocking ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (wanted != flags && ::fcntl(socket.fd(), F_SETFL, wanted) != 0) {
    throw SystemError("fcntl(F_SETFL)", errno, "socket " + std::to_string(socket.fd()));
  }
}

namespace detail {

std::string format_sockaddr(const sockaddr* address, socklen_t length) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    return fmt::format("{}:{}", text, ntohs(in->sin_port));
  }
  if (address->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      // An IPv4 peer of a dual-stack listener: show it as the IPv4 address it is.
      ::inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], text, sizeof(text));
      return fmt::format("{}:{}", text, ntohs(in6->sin6_port));
    }
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    return fmt::format("[{}]:{}", text, ntohs(in6->sin6_port));
  }
  return "unknown address";
}

bool poll_until(int fd, short events, const Deadline& deadline, const std::string& context) {
  for (;;) {
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, deadline.remaining_ms());
    if (ready > 0) return true;
    if (ready == 0) {
      if (deadline.expired()) return false;
      continue;  // poll's millisecond rounding woke us a little early
    }
    if (errno != EINTR) throw SystemError("poll", errno, context);
  }
}

}  // namespace detail

}  // namespace kolo::transport
