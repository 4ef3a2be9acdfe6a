// Opening TCP connections: listening, accepting and connecting, each bounded by a deadline.
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "base/errors.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/socket_internal.h"

namespace kolo::transport {

namespace {

using AddressList = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;

// Resolves `host` (empty with `passive`: the wildcard address). A resolver that is temporarily
// unavailable (EAI_AGAIN) is reported as nullptr so callers with a deadline can retry.
AddressList resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  const int status =
      ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &result);
  if (status == EAI_AGAIN) return AddressList(nullptr, &::freeaddrinfo);
  if (status != 0) {
    throw InvalidArgument("cannot resolve host '" + host + "': " + ::gai_strerror(status));
  }
  return AddressList(result, &::freeaddrinfo);
}

Socket bind_and_listen(int family, const sockaddr* address, socklen_t length, int backlog,
                       const std::string& what) {
  Socket socket(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!socket.valid()) throw SystemError("socket", errno, what);
  int on = 1;
  // A restarted job must be able to reuse its port while old connections sit in TIME_WAIT.
  if (::setsockopt(socket.fd(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0) {
    throw SystemError("setsockopt(SO_REUSEADDR)", errno, what);
  }
  if (family == AF_INET6) {
    int off = 0;  // dual stack: the wildcard listener also takes IPv4 peers
    if (::setsockopt(socket.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) != 0) {
      throw SystemError("setsockopt(IPV6_V6ONLY)", errno, what);
    }
  }
  if (::bind(socket.fd(), address, length) != 0) throw SystemError("bind", errno, what);
  if (::listen(socket.fd(), backlog) != 0) throw SystemError("listen", errno, what);
  return socket;
}

// Errors after which the peer may simply not be listening yet, or the network hiccupped.
bool worth_retrying(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET || err == ECONNABORTED ||
         err == EHOSTUNREACH || err == ENETUNREACH || err == EADDRNOTAVAIL || err == EAGAIN;
}

// A loopback connect to a closed port inside the ephemeral range can connect to itself (TCP
// simultaneous open). Such a socket talks to nobody: treat it as refused.
bool connected_to_itself(int fd) {
  sockaddr_storage local{};
  sockaddr_storage remote{};
  socklen_t local_length = sizeof(local);
  socklen_t remote_length = sizeof(remote);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) != 0) return false;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remote_length) != 0) return false;
  return local_length == remote_length && std::memcmp(&local, &remote, local_length) == 0;
}

// One non-blocking connect attempt to one address. Returns a connected blocking socket, or an
// invalid one with `error` set (ETIMEDOUT when the deadline passed first).
Socket try_connect(const addrinfo& address, const Deadline& deadline, const std::string& what,
                   int& error) {
  Socket socket(::socket(address.ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!socket.valid()) throw SystemError("socket", errno, what);
  if (::connect(socket.fd(), address.ai_addr, address.ai_addrlen) != 0) {
    if (errno != EINPROGRESS && errno != EINTR) {
      error = errno;
      return {};
    }
    if (!detail::poll_until(socket.fd(), POLLOUT, deadline, "connect to " + what)) {
      error = ETIMEDOUT;
      return {};
    }
    int status = 0;
    socklen_t length = sizeof(status);
    if (::getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &status, &length) != 0) {
      throw SystemError("getsockopt(SO_ERROR)", errno, what);
    }
    if (status != 0) {
      error = status;
      return {};
    }
  }
  if (connected_to_itself(socket.fd())) {
    error = ECONNREFUSED;
    return {};
  }
  set_nonblocking(socket, false);
  return socket;
}

}  // namespace

Socket listen_tcp(const std::string& bind_host, uint16_t port, int backlog) {
  const std::string what = "listen on " + (bind_host.empty() ? std::string("*") : bind_host) + ":" +
                           std::to_string(port);
  if (bind_host.empty()) {
    // Prefer one dual-stack socket; fall back to IPv4 where IPv6 is disabled.
    try {
      sockaddr_in6 any6{};
      any6.sin6_family = AF_INET6;
      any6.sin6_addr = in6addr_any;
      any6.sin6_port = htons(port);
      return bind_and_listen(AF_INET6, reinterpret_cast<const sockaddr*>(&any6), sizeof(any6),
                             backlog, what);
    } catch (const SystemError&) {
      sockaddr_in any4{};
      any4.sin_family = AF_INET;
      any4.sin_addr.s_addr = htonl(INADDR_ANY);
      any4.sin_port = htons(port);
      return bind_and_listen(AF_INET, reinterpret_cast<const sockaddr*>(&any4), sizeof(any4),
                             backlog, what);
    }
  }
  AddressList addresses = resolve(bind_host, port, true);
  if (!addresses) throw Error("cannot resolve '" + bind_host + "' (resolver busy): " + what);
  // A name may resolve to IPv6 and IPv4 addresses; take the first one this host can bind.
  for (const addrinfo* address = addresses.get();; address = address->ai_next) {
    try {
      return bind_and_listen(address->ai_family, address->ai_addr, address->ai_addrlen, backlog,
                             what);
    } catch (const SystemError&) {
      if (address->ai_next == nullptr) throw;
    }
  }
}

Socket connect_tcp(const Endpoint& endpoint, Deadline deadline) {
  const std::string what = endpoint.to_string();
  auto backoff = std::chrono::milliseconds(10);
  int last_error = 0;
  int attempts = 0;
  for (;;) {
    AddressList addresses = resolve(endpoint.host, endpoint.port, false);
    if (!addresses) last_error = EAGAIN;
    for (const addrinfo* address = addresses.get(); address != nullptr;
         address = address->ai_next) {
      ++attempts;
      Socket socket = try_connect(*address, deadline, what, last_error);
      if (socket.valid()) return socket;
      if (!worth_retrying(last_error)) throw SystemError("connect", last_error, what);
    }
    if (deadline.expired()) break;
    // Back off so a rank that starts late is not flooded, but keep retries frequent enough that
    // a listener that appears is found quickly.
    const auto left = std::chrono::milliseconds(deadline.remaining_ms());
    std::this_thread::sleep_for(std::min(backoff, left));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
    if (deadline.expired()) break;
  }
  throw TimeoutError("timed out connecting to " + what + " after " + std::to_string(attempts) +
                     " attempt(s) (last error: " + std::strerror(last_error) + ")");
}

Socket accept_tcp(const Socket& listener, Deadline deadline) {
  for (;;) {
    if (!detail::poll_until(listener.fd(), POLLIN, deadline, "accept")) return {};
    Socket socket(::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (socket.valid()) return socket;
    // The connection may have vanished between poll and accept, or another thread took it.
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED ||
        errno == EPROTO) {
      if (deadline.expired()) return {};
      continue;
    }
    throw SystemError("accept", errno, "listener on port " + std::to_string(local_port(listener)));
  }
}

}  // namespace kolo::transport
