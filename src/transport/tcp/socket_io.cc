// write_all / read_all: whole-buffer transfers for handshakes, bounded by a deadline. Every call
// uses MSG_DONTWAIT and waits in poll(2), so the deadline holds even on a blocking socket.
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "base/errors.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/socket_internal.h"

namespace kolo::transport {

namespace {

[[noreturn]] void throw_broken(const char* call, int err, const std::string& who) {
  SystemError cause(call, err, who);
  throw PeerError(-1, "lost connection to " + who + ": " + cause.what());
}

}  // namespace

void write_all(const Socket& socket, const void* data, size_t size, Deadline deadline,
               const std::string& who) {
  const auto* bytes = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    // MSG_NOSIGNAL: a peer that went away must become an error here, not a SIGPIPE.
    const ssize_t n = ::send(socket.fd(), bytes + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) throw_broken("send", errno, who);
    if (!detail::poll_until(socket.fd(), POLLOUT, deadline, "send to " + who)) {
      throw TimeoutError("timed out sending to " + who + " (" + std::to_string(done) + " of " +
                         std::to_string(size) + " bytes sent)");
    }
  }
}

void read_all(const Socket& socket, void* data, size_t size, Deadline deadline,
              const std::string& who) {
  auto* bytes = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::recv(socket.fd(), bytes + done, size - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      throw PeerError(-1, who + " closed the connection (" + std::to_string(done) + " of " +
                              std::to_string(size) + " expected bytes received)");
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) throw_broken("recv", errno, who);
    if (!detail::poll_until(socket.fd(), POLLIN, deadline, "receive from " + who)) {
      throw TimeoutError("timed out waiting for " + who + " (" + std::to_string(done) + " of " +
                         std::to_string(size) + " expected bytes received)");
    }
  }
}

}  // namespace kolo::transport
