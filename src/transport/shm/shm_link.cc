#include "transport/shm/shm_link.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "base/errors.h"
#include "transport/wait_fence.h"

namespace kolo::transport::shm {

namespace {

// Sends up to this size go through the fast box (when the byte ring is drained): a few lines,
// each with its own sequence number, so a reader never waits on a separate head.
constexpr size_t kFastboxMaxSend = 4 * kFastboxPayload;
// A tiny send that cannot take the box (the ring still holds bytes for the reader, or the box is
// full) first waits this many attempts (the caller's wait loop spins meanwhile) before it goes
// through the ring. Otherwise a writer that outruns its reader never leaves the ring: each send
// must follow the previous one there until the reader drains it, and the reader pays the ring's
// two lines and full barrier per message (perf of back-to-back 8-byte broadcasts: most samples
// in Ring::write_some, read_some and readable). Bounded, so that a writer never depends on the
// reader draining its ring to make progress (algorithms may rely on the ring's buffering). Not
// with more ranks than CPUs (set_oversubscribed): there the writer's waiting only delays it (3
// ranks on 2 cores, 8-byte broadcast: 0.12-0.27 us with the wait, 0.05-0.10 without).
constexpr unsigned kBoxAttempts = 64;

class ShmLink final : public Link {
 public:
  ShmLink(Segment segment, bool creator, std::unique_ptr<Link> socket_link, ShmFences fences)
      : segment_(std::move(segment)),
        tx_(segment_.ring(creator ? 0 : 1)),
        rx_(segment_.ring(creator ? 1 : 0)),
        fast_tx_(segment_.fastbox(creator ? 0 : 1)),
        fast_rx_(segment_.fastbox(creator ? 1 : 0)),
        socket_(std::move(socket_link)),
        description_(socket_->peer_description() + " via shared memory"),
        wait_fences_(fences == ShmFences::wait_fence_if_available && join_wait_fences()) {
    if (wait_fences_) fast_rx_.announce_fences();
  }

  ~ShmLink() override = default;

  size_t send_some(ConstBytes data) override {
    if (data.empty()) return 0;
    check_open();
    // The fast box only while the ring is drained: the reader takes the box's lines before the
    // ring's bytes, so box after ring must wait for the reader to empty the ring; ring after
    // box is in order by itself.
    if (data.size() <= kFastboxMaxSend) {
      const size_t n = tx_.drained() ? fast_tx_.write(data.data(), data.size()) : 0;
      if (n > 0) {
        // The Dekker store-load pair with the reader's prepare to sleep (wait_fence.h): the
        // box line above, then consumer_waiting in producer_should_ring below.
        if (wait_fences_ && fast_tx_.reader_fences()) {
          std::atomic_signal_fence(std::memory_order_seq_cst);  // the sleeper's fence orders
        } else {
          std::atomic_thread_fence(std::memory_order_seq_cst);
        }
        if (tx_.producer_should_ring()) ring_doorbell();
        box_attempts_ = 0;
        return n;
      }
      if (!oversubscribed_ && ++box_attempts_ <= kBoxAttempts && !peer_gone_) return 0;
    }
    box_attempts_ = 0;
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
    // The ring's head first (acquire): every box line written before those ring bytes is then
    // visible below, and the box's lines are older than any byte in the ring (see send_some).
    // Bytes that reach the ring after this load may follow box lines not seen yet: they wait
    // for the next call.
    const size_t in_ring = rx_.readable();
    size_t n = fast_rx_.read(data.data(), data.size());
    if (n < data.size() && in_ring > 0) {
      const size_t from_ring = rx_.read_some(data.data() + n, std::min(in_ring, data.size() - n));
      n += from_ring;
      if (from_ring > 0 && rx_.consumer_should_ring()) ring_doorbell();
    }
    if (n == 0 && peer_gone_) {
      throw closed_error();  // every byte it wrote before leaving was read
    }
    return n;
  }

  // The byte ring's flags are Dekker pairs with full barriers on both sides (ring.h): the ring
  // is looked at here. The fast box's lines are published without one when this side fences
  // (wait_fence.h): it is looked at in ready_after_fence, after the one fence of the whole wait
  // (WaitArming), or here right after consumer_arm's full barrier in the fallback.
  WaitArm arm_wait(bool want_send, bool want_recv) override {
    drain_doorbell();
    if (peer_gone_) return {-1, false};  // the next send_some/recv_some reports it
    // A tiny send waiting for the box is not blocked: its next attempts end in the ring.
    bool ready = want_send && (box_attempts_ > 0 || tx_.producer_arm());
    bool check_after_fence = false;
    if (want_recv && !ready) {
      if (rx_.consumer_arm()) {
        ready = true;
      } else if (wait_fences_) {
        check_after_fence = true;
      } else {
        ready = fast_rx_.readable();
      }
    }
    return {ready ? -1 : POLLIN, check_after_fence};
  }

  [[nodiscard]] bool ready_after_fence() const override { return fast_rx_.readable(); }

  void set_oversubscribed(bool oversubscribed) override { oversubscribed_ = oversubscribed; }

  [[nodiscard]] bool has_pending_input() const override {
    return rx_.readable() > 0 || fast_rx_.readable();
  }
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
  FastboxWriter fast_tx_;
  FastboxReader fast_rx_;
  std::unique_ptr<Link> socket_;
  std::string description_;
  bool wait_fences_;  // this process takes part in the sleeper's fence (wait_fence.h)
  bool oversubscribed_ = false;
  unsigned box_attempts_ = 0;  // consecutive tiny sends that found the box unusable
  bool peer_gone_ = false;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<Link> make_shm_link(Segment segment, bool creator,
                                    std::unique_ptr<Link> socket_link, ShmFences fences) {
  return std::make_unique<ShmLink>(std::move(segment), creator, std::move(socket_link), fences);
}

}  // namespace kolo::transport::shm
