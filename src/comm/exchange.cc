// Communicator::exchange: the one loop in kolo that waits for peers. It drives every transfer
// with non-blocking send_some/recv_some, spins briefly when nothing moves (a small message is
// usually a few microseconds away), then sleeps in poll(2) on the links involved plus POLLRDHUP
// on every other peer, so a rank that dies anywhere in the group fails this wait at once.
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/errors.h"
#include "comm/communicator.h"
#include "comm/cpu_relax.h"
#include "comm/link_watch.h"
#include "comm/patient_waits.h"

namespace kolo::comm {

namespace {

struct Transfer {
  int peer;
  Link* link;
  const std::byte* send_data;  // exactly one of send_data / recv_data is set
  std::byte* recv_data;
  size_t size;
  size_t done = 0;

  [[nodiscard]] bool is_send() const { return send_data != nullptr; }
  [[nodiscard]] bool finished() const { return done == size; }
};

// Per-peer bits, rebuilt on every pass except kMuted.
constexpr uint8_t kSendActive = 1;  // during a pass: a send to this peer already had its turn
constexpr uint8_t kRecvActive = 2;
constexpr uint8_t kWantSend = 4;  // some send to this peer is unfinished
constexpr uint8_t kWantRecv = 8;
constexpr uint8_t kMuted = 16;  // peer hung up but left bytes for a later read: stop watching it

// How long a wait only pauses the CPU before it starts yielding it.
constexpr auto kPauseSpin = std::chrono::microseconds(2);
constexpr unsigned kPausePasses = 32;

}  // namespace

struct Communicator::ExchangeLists {
  std::vector<Transfer> transfers;
  std::vector<uint8_t> peers;
  std::vector<pollfd> fds;
  std::vector<int> fd_peers;
};

void Communicator::ExchangeListsDeleter::operator()(ExchangeLists* lists) const { delete lists; }

namespace {

class Exchange {
 public:
  // `lists` are the communicator's, reused: cleared here, grown only when a call needs more.
  Exchange(Communicator& comm, std::span<const SendOp> sends, std::span<const RecvOp> recvs,
           std::vector<Transfer>& transfers, std::vector<uint8_t>& peers, std::vector<pollfd>& fds,
           std::vector<int>& fd_peers, transport::WaitArming& arming)
      : comm_(comm),
        transfers_(transfers),
        peers_(peers),
        fds_(fds),
        fd_peers_(fd_peers),
        arming_(arming),
        oversubscribed_(comm.oversubscribed()) {
    peers_.assign(static_cast<size_t>(comm.size()), 0);
    transfers_.clear();
    for (const SendOp& op : sends) {
      if (!op.data.empty()) {
        transfers_.push_back(
            {op.peer, &comm.peer(op.peer), op.data.data(), nullptr, op.data.size()});
      }
    }
    for (const RecvOp& op : recvs) {
      if (!op.data.empty()) {
        transfers_.push_back(
            {op.peer, &comm.peer(op.peer), nullptr, op.data.data(), op.data.size()});
      }
    }
    remaining_ = transfers_.size();
  }

  void run() {
    const auto spin = comm_.options().spin_before_poll;
    // A driving caller on a core of its own spins (pauses) past a wake-up's latency instead of
    // yielding and sleeping (comm/patient_waits.h).
    const auto pause_spin =
        PatientWaits::active() && !oversubscribed_ ? PatientWaits::kSpin : kPauseSpin;
    // The clock is read only once a wait lasts longer than a few passes (reading it costs as
    // much as a pass); "last progress" is then when the idle passes began, close enough.
    Clock::time_point last_progress;
    unsigned idle_passes = 0;
    while (remaining_ > 0) {
      if (advance()) {
        idle_passes = 0;
        continue;
      }
      if (remaining_ == 0) break;
      // Oversubscribed, the peer we wait for may need this very core: yield it at once.
      if (++idle_passes < kPausePasses && !oversubscribed_) {
        detail::cpu_relax();
        continue;
      }
      const auto now = Clock::now();
      if (idle_passes == kPausePasses || (oversubscribed_ && idle_passes == 1)) {
        last_progress = now;
      }
      if (now - last_progress < pause_spin && !oversubscribed_) {
        // A peer on another core answers within a few hundred nanoseconds (shared memory): a
        // system call here would cost more than the wait itself.
        detail::cpu_relax();
        continue;
      }
      if (now - last_progress < spin) {
        ::sched_yield();  // let a peer on the same core run instead of burning its time slice
        continue;
      }
      const auto timeout = comm_.options().peer_timeout;
      if (now - last_progress >= timeout) fail_no_progress();
      wait(std::chrono::ceil<std::chrono::milliseconds>(timeout - (now - last_progress)));
    }
  }

 private:
  // One non-blocking attempt on every stream that has work. Transfers to the same peer in the
  // same direction share one ordered stream, so only the first unfinished one may move.
  bool advance() {
    bool moved = false;
    for (auto& bits : peers_) bits &= kMuted;
    for (Transfer& t : transfers_) {
      if (t.finished()) continue;
      const uint8_t active = t.is_send() ? kSendActive : kRecvActive;
      uint8_t& bits = peers_[static_cast<size_t>(t.peer)];
      if (bits & active) continue;
      bits |= active;
      const size_t n = t.is_send() ? t.link->send_some({t.send_data + t.done, t.size - t.done})
                                   : t.link->recv_some({t.recv_data + t.done, t.size - t.done});
      if (n == 0) continue;
      t.done += n;
      moved = true;
      if (t.finished()) {
        --remaining_;
        bits &= static_cast<uint8_t>(~active);  // the next transfer on this stream may start
      }
    }
    // What is still wanted from each peer, for wait() and on_hangup().
    for (auto& bits : peers_) bits &= kMuted;
    for (const Transfer& t : transfers_) {
      if (!t.finished()) peers_[static_cast<size_t>(t.peer)] |= t.is_send() ? kWantSend : kWantRecv;
    }
    return moved;
  }

  // Sleeps until a link involved may progress or a watched peer hangs up (or `timeout`).
  void wait(std::chrono::milliseconds timeout) {
    fds_.clear();
    fd_peers_.clear();
    bool must_spin = false;  // a link without an fd has work: poll cannot wait for it
    arming_.begin();
    for (int p = 0; p < comm_.size(); ++p) {
      if (p == comm_.rank()) continue;
      const uint8_t bits = peers_[static_cast<size_t>(p)];
      short events = 0;
      if (bits & kWantRecv) events |= POLLIN;
      if (bits & kWantSend) events |= POLLOUT;
      if (events == 0 && ((bits & kMuted) || !comm_.watching_all_peers())) continue;
      Link& link = comm_.peer(p);
      const int fd = link.fd();
      if (fd < 0) {
        must_spin = must_spin || events != 0;
        continue;
      }
      if (events != 0) {
        const int wanted = arming_.arm(link, (events & POLLOUT) != 0, (events & POLLIN) != 0);
        if (wanted < 0) {
          must_spin = true;  // it can move already: look again without sleeping
          events = 0;
        } else {
          events = static_cast<short>(wanted);
        }
      }
      fds_.push_back({fd, static_cast<short>(events | POLLRDHUP), 0});
      fd_peers_.push_back(p);
    }
    // One fence for all the shared-memory links armed above, then their last look.
    if (arming_.settle()) must_spin = true;
    const int timeout_ms = must_spin ? 0 : static_cast<int>(std::max<int64_t>(timeout.count(), 1));
    const int ready = ::poll(fds_.data(), fds_.size(), timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) return;
      throw SystemError("poll", errno, "waiting for peers");
    }
    for (size_t i = 0; i < fds_.size(); ++i) {
      if (fds_[i].revents & detail::kHangupEvents) on_hangup(fd_peers_[i]);
    }
    if (must_spin) ::sched_yield();
  }

  void on_hangup(int p) {
    uint8_t& bits = peers_[static_cast<size_t>(p)];
    // Still receiving from it: read what it sent first; the read at end-of-stream throws.
    if (bits & kWantRecv) return;
    Link& link = comm_.peer(p);
    // Bytes it sent before leaving belong to a later operation: not an error yet.
    if (!(bits & kWantSend) && link.has_pending_input()) {
      bits |= kMuted;
      return;
    }
    throw detail::peer_closed_error(link);
  }

  [[noreturn]] void fail_no_progress() {
    std::string waiting;
    int blamed = -1;
    for (int pass = 0; pass < 2; ++pass) {  // receives first: they name who is silent
      for (const Transfer& t : transfers_) {
        if (t.finished() || t.is_send() != (pass == 1)) continue;
        if (!waiting.empty()) waiting += ", ";
        waiting += fmt::format("{} [{} of {} bytes left to {}]", t.link->peer_description(),
                               t.size - t.done, t.size, t.is_send() ? "send" : "receive");
        if (blamed < 0) blamed = t.link->peer_rank();
      }
    }
    throw PeerError(blamed,
                    fmt::format("no progress from {} for {}", waiting,
                                detail::format_duration(comm_.options().peer_timeout)),
                    PeerError::Kind::silent);
  }

  Communicator& comm_;
  std::vector<Transfer>& transfers_;
  std::vector<uint8_t>& peers_;
  std::vector<pollfd>& fds_;
  std::vector<int>& fd_peers_;
  transport::WaitArming& arming_;
  size_t remaining_ = 0;
  bool oversubscribed_;
};

}  // namespace

void Communicator::exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs) {
  // A lone transfer (a tree broadcast's send or receive, a point-to-point message) usually
  // completes at its first attempt: the bytes already wait in the link, or fit its buffer. Try
  // that before setting up the loop, which costs about as much again as the transfer itself for
  // a few bytes; what is left (or nothing moved) goes through the loop as usual.
  if (sends.empty() && recvs.empty()) return;
  if (sends.size() + recvs.size() == 1) {
    if (!sends.empty()) {
      const SendOp& op = sends.front();
      if (op.data.empty()) return;
      const size_t done = peer(op.peer).send_some(op.data);
      if (done == op.data.size()) return;
      const SendOp rest{op.peer, op.data.subspan(done)};
      return exchange_loop({&rest, 1}, {});
    }
    const RecvOp& op = recvs.front();
    if (op.data.empty()) return;
    const size_t done = peer(op.peer).recv_some(op.data);
    if (done == op.data.size()) return;
    const RecvOp rest{op.peer, op.data.subspan(done)};
    return exchange_loop({}, {&rest, 1});
  }
  exchange_loop(sends, recvs);
}

void Communicator::exchange_loop(std::span<const SendOp> sends, std::span<const RecvOp> recvs) {
  if (!exchange_lists_) exchange_lists_.reset(new ExchangeLists);
  ExchangeLists& lists = *exchange_lists_;
  Exchange(*this, sends, recvs, lists.transfers, lists.peers, lists.fds, lists.fd_peers,
           wait_arming_)
      .run();
}

}  // namespace kolo::comm
