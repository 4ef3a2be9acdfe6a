#include "transport/shm/shm_link.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "base/errors.h"

namespace kolo::transport::shm {

namespace {

class ShmLink final : public Link {
 public:
  ShmLink(Segment segment, bool creator, std::unique_ptr<Link> socket_link)
      : segment_(std::move(segment)),
        tx_(segment_.ring(creator ? 0 : 1)),
        rx_(segment_.ring(creator ? 1 : 0)),
        socket_(std::move(socket_link)),
        description_(socket_->peer_description() + " via shared memory") {}

  ~ShmLink() override = default;

  size_t send_some(ConstBytes data) override {
    if (data.empty()) return 0;
    check_open();
    const size_t n = tx_.write_some(data.data(), data.size());
    if (n > 0) {
      if (tx_.producer_should_ring()) ring_doorbell();
    } else if (peer_gone_) {
      throw closed_error();
    }
    return n;
  }

  size_t recv_some(Bytes data) override {
    if (data.empty()) return 0;
    check_open();
    const size_t n = rx_.read_some(data.data(), data.size());
    if (n > 0) {
      if (rx_.consumer_should_ring()) ring_doorbell();
    } else if (peer_gone_) {
      throw closed_error();  // every byte it wrote before leaving was read
    }
    return n;
  }

  int prepare_wait(bool want_send, bool want_recv) override {
    drain_doorbell();
    if (peer_gone_) return -1;  // the next send_some/recv_some reports it
    bool ready = false;
    if (want_recv && rx_.consumer_arm()) ready = true;
    if (want_send && tx_.producer_arm()) ready = true;
    return ready ? -1 : POLLIN;
  }

  [[nodiscard]] bool has_pending_input() const override { return rx_.readable() > 0; }
  [[nodiscard]] int fd() const override { return socket_->fd(); }
  [[nodiscard]] int peer_rank() const override { return socket_->peer_rank(); }
  [[nodiscard]] const std::string& peer_description() const override { return description_; }

  void close() override {
    closed_ = true;
    socket_->close();
  }

 private:
  void check_open() const {
    if (closed_) {
      throw PeerError(peer_rank(), "link to " + description_ + " was closed after an error");
    }
  }

  [[nodiscard]] PeerError closed_error() const {
    return PeerError(peer_rank(),
                     description_ + " closed the connection (process exited or was killed)");
  }

  // One byte wakes the peer's poll(2). A full socket buffer already holds unread wake-ups, and a
  // dead peer is reported by the hang-up, so failures here are ignored.
  void ring_doorbell() {
    const std::byte bell{1};
    [[maybe_unused]] const ssize_t n = ::send(socket_->fd(), &bell, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  // Discards wake-ups (so poll does not report them again) and learns whether the peer left.
  void drain_doorbell() {
    std::byte sink[256];
    for (;;) {
      const ssize_t n = ::recv(socket_->fd(), sink, sizeof(sink), MSG_DONTWAIT);
      if (n > 0) continue;
      if (n == 0) {
        peer_gone_ = true;
        return;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) peer_gone_ = true;  // reset, etc.
      return;
    }
  }

  Segment segment_;
  Ring tx_;
  Ring rx_;
  std::unique_ptr<Link> socket_;
  std::string description_;
  bool peer_gone_ = false;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<Link> make_shm_link(Segment segment, bool creator,
                                    std::unique_ptr<Link> socket_link) {
  return std::make_unique<ShmLink>(std::move(segment), creator, std::move(socket_link));
}

}  // namespace kolo::transport::shm
