#include "transport/tcp/socket_link.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "base/errors.h"

namespace kolo::transport {

namespace {

class SocketLink final : public Link {
 public:
  SocketLink(Socket socket, int peer_rank, std::string description)
      : socket_(std::move(socket)), peer_rank_(peer_rank), description_(std::move(description)) {
    set_nonblocking(socket_, true);
  }

  size_t send_some(ConstBytes data) override {
    if (data.empty()) return 0;
    check_open();
    for (;;) {
      // MSG_NOSIGNAL: a dead peer must become an error here, not a SIGPIPE that kills the rank.
      ssize_t n = ::send(socket_.fd(), data.data(), data.size(), MSG_NOSIGNAL);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      fail("send", errno);
    }
  }

  size_t recv_some(Bytes data) override {
    if (data.empty()) return 0;
    check_open();
    for (;;) {
      ssize_t n = ::recv(socket_.fd(), data.data(), data.size(), 0);
      if (n > 0) return static_cast<size_t>(n);
      if (n == 0) {
        throw PeerError(peer_rank_, description_ +
                                        " closed the connection (process exited or "
                                        "was killed)");
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      fail("recv", errno);
    }
  }

  [[nodiscard]] int fd() const override { return socket_.fd(); }
  [[nodiscard]] int peer_rank() const override { return peer_rank_; }
  [[nodiscard]] const std::string& peer_description() const override { return description_; }

  void close() override {
    if (socket_.valid()) ::shutdown(socket_.fd(), SHUT_RDWR);
    closed_ = true;
  }

 private:
  void check_open() const {
    if (closed_)
      throw PeerError(peer_rank_, "link to " + description_ + " was closed after an error");
  }
  [[noreturn]] void fail(const char* call, int err) const {
    SystemError cause(call, err, description_);
    throw PeerError(peer_rank_,
                    std::string("lost connection to ") + description_ + ": " + cause.what());
  }

  Socket socket_;
  int peer_rank_;
  std::string description_;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<Link> make_socket_link(Socket socket, int peer_rank, std::string description) {
  return std::make_unique<SocketLink>(std::move(socket), peer_rank, std::move(description));
}

std::pair<Socket, Socket> socket_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw SystemError("socketpair", errno, "");
  }
  return {Socket(fds[0]), Socket(fds[1])};
}

}  // namespace kolo::transport
