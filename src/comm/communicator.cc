#include "comm/communicator.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "base/clock.h"
#include "base/errors.h"
#include "comm/collective_arena.h"
#include "comm/link_watch.h"
#include "transport/frame_header.h"

namespace kolo::comm {

namespace {
// Frames up to this size go out with their header in one send (one syscall, one packet).
constexpr size_t kCoalesceFrameBytes = 4096;

// Appends each peer's link descriptor to `fds`, watched for a hang-up, and returns the peers in
// that order. The descriptor alone: whoever runs collectives owns the link's state (see the
// header), so a watch from another thread reads nothing from the link.
std::vector<int> watch_hangups(const std::vector<Link*>& links, int self,
                               std::vector<pollfd>& fds) {
  std::vector<int> peers;
  for (int p = 0; p < static_cast<int>(links.size()); ++p) {
    const Link* link = links[static_cast<size_t>(p)];
    if (p != self && link != nullptr && link->fd() >= 0) {
      fds.push_back({link->fd(), POLLRDHUP, 0});
      peers.push_back(p);
    }
  }
  return peers;
}
}  // namespace

Communicator::Communicator(int rank, std::vector<Link*> links, Topology topology,
                           CommunicatorOptions options)
    : rank_(rank), links_(std::move(links)), topology_(std::move(topology)), options_(options) {
  const int n = size();
  if (rank_ < 0 || rank_ >= n) {
    throw InvalidArgument(fmt::format("communicator rank {} is outside a group of {}", rank_, n));
  }
  for (int r = 0; r < n; ++r) {
    if (r != rank_ && links_[static_cast<size_t>(r)] == nullptr) {
      throw InvalidArgument(fmt::format("rank {}: no link to peer {} (group of {})", rank_, r, n));
    }
  }
  if (topology_.host_of_rank.empty()) topology_ = Topology::flat(n, /*one_host=*/false);
  if (static_cast<int>(topology_.host_of_rank.size()) != n) {
    throw InvalidArgument(fmt::format("topology describes {} ranks but the group has {}",
                                      topology_.host_of_rank.size(), n));
  }
  if (const CollectiveArena* arena = topology_.host_arena.get()) {
    const std::vector<int>& members = arena->host.members;
    arena_usable_ = static_cast<int>(members.size()) == n && arena->host.slot == rank_;
    for (int r = 0; arena_usable_ && r < n; ++r) {
      arena_usable_ = r == rank_ || links_[static_cast<size_t>(r)]->peer_rank() == members[r];
    }
  }
  // The host's CPUs, not this process's affinity: ranks pinned one per core (taskset, mpirun's
  // binding) each see one CPU but do not compete, and must keep spinning.
  const int my_host = topology_.host_of_rank[static_cast<size_t>(rank_)];
  host_ranks_ = options_.host_ranks > 0 ? options_.host_ranks
                                        : static_cast<int>(topology_.ranks_on_host(my_host).size());
  if (const CollectiveArena* arena = topology_.host_arena.get()) {
    // The arena's members are the job's ranks on this machine, hosts named apart included
    // (bootstrap/machine_identity.h): they compete for its CPUs too.
    host_ranks_ = std::max(host_ranks_, static_cast<int>(arena->host.members.size()));
  }
  const long cpus = options_.host_cpus > 0 ? options_.host_cpus : ::sysconf(_SC_NPROCESSORS_ONLN);
  oversubscribed_ = cpus > 0 && host_ranks_ > cpus;
  for (int r = 0; r < n; ++r) {
    if (r != rank_) links_[static_cast<size_t>(r)]->set_oversubscribed(oversubscribed_);
  }
}

Bytes Communicator::scratch(size_t bytes) {
  if (scratch_->size < bytes) {
    scratch_->data = std::make_unique_for_overwrite<std::byte[]>(bytes);
    scratch_->size = bytes;
  }
  return {scratch_->data.get(), bytes};
}

void Communicator::check_alive(std::span<const int> peers) {
  std::vector<pollfd> fds;
  for (int p : peers) fds.push_back({peer(p).fd(), POLLRDHUP, 0});
  if (::poll(fds.data(), fds.size(), 0) <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents & detail::kHangupEvents) throw detail::peer_closed_error(peer(peers[i]));
  }
}

Link& Communicator::peer(int r) {
  if (r < 0 || r >= size() || r == rank_) {
    throw InvalidArgument(
        fmt::format("rank {}: {} is not a peer in a group of {}", rank_, r, size()));
  }
  return *links_[static_cast<size_t>(r)];
}

void Communicator::send(int peer, ConstBytes data) {
  const SendOp op{peer, data};
  exchange({&op, 1}, {});
}

void Communicator::recv(int peer, Bytes data) {
  const RecvOp op{peer, data};
  exchange({}, {&op, 1});
}

void Communicator::send_recv(int to, ConstBytes out, int from, Bytes in) {
  const SendOp send{to, out};
  const RecvOp recv{from, in};
  exchange({&send, 1}, {&recv, 1});
}

void Communicator::send_frame(int peer, ConstBytes data) {
  if (data.size() > options_.frame_limit) {
    throw InvalidArgument(fmt::format("rank {}: frame of {} bytes for {} exceeds the limit of {}",
                                      rank_, data.size(), this->peer(peer).peer_description(),
                                      options_.frame_limit));
  }
  std::byte header[transport::kFrameHeaderSize];
  transport::encode_frame_header(data.size(), header);
  if (data.size() <= kCoalesceFrameBytes) {
    std::array<std::byte, transport::kFrameHeaderSize + kCoalesceFrameBytes> message;
    std::memcpy(message.data(), header, sizeof(header));
    if (!data.empty()) std::memcpy(message.data() + sizeof(header), data.data(), data.size());
    send(peer, ConstBytes(message.data(), sizeof(header) + data.size()));
    return;
  }
  const SendOp ops[2] = {{peer, ConstBytes(header, sizeof(header))}, {peer, data}};
  exchange(ops, {});
}

std::vector<std::byte> Communicator::recv_frame(int peer) {
  std::byte header[transport::kFrameHeaderSize];
  recv(peer, Bytes(header, sizeof(header)));
  const uint64_t length = transport::decode_frame_header(header, options_.frame_limit,
                                                         this->peer(peer).peer_description());
  std::vector<std::byte> data(length);
  recv(peer, data);
  return data;
}

void Communicator::wait_idle(int wake_fd, std::chrono::microseconds timeout, bool wake_on_bytes) {
  const auto deadline = Clock::now() + timeout;
  std::vector<bool> muted(links_.size(), false);
  std::vector<pollfd> fds;
  std::vector<int> fd_peers;
  for (;;) {
    fds.clear();
    fd_peers.clear();
    wait_arming_.begin();
    if (wake_fd >= 0) {
      fds.push_back({wake_fd, POLLIN, 0});
      fd_peers.push_back(-1);
    }
    for (int p = 0; p < size(); ++p) {
      if (p == rank_ || muted[static_cast<size_t>(p)] || links_[p]->fd() < 0) continue;
      // Bytes from a peer mean it already entered the next cycle and waits for this rank:
      // wake now instead of sleeping out the cycle (lockstep cycles otherwise cost up to a
      // cycle time per round trip whenever ranks are out of phase, as in a backward pass).
      const int events = wait_arming_.arm(*links_[p], /*want_send=*/false, wake_on_bytes);
      if (events < 0) return;
      fds.push_back({links_[p]->fd(), static_cast<short>(events | POLLRDHUP), 0});
      fd_peers.push_back(p);
    }
    if (wait_arming_.settle()) return;  // one fence for every shared-memory link armed above
    const auto left = std::max(deadline - Clock::now(), Clock::duration::zero());
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(left);
    const timespec wait_for{static_cast<time_t>(seconds.count()),
                            static_cast<long>((left - seconds) / std::chrono::nanoseconds(1))};
    const int ready = ::ppoll(fds.data(), fds.size(), &wait_for, nullptr);
    if (ready < 0) {
      if (errno != EINTR) throw SystemError("ppoll", errno, "idle wait");
    } else if (ready == 0) {
      return;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      if (fd_peers[i] < 0) return;  // woken
      Link& link = *links_[static_cast<size_t>(fd_peers[i])];
      if (!(fds[i].revents & detail::kHangupEvents)) return;  // the peer started a cycle
      // A peer that sent bytes and then left is reported when those bytes are read.
      if (!link.has_pending_input()) throw detail::peer_closed_error(link);
      muted[static_cast<size_t>(fd_peers[i])] = true;
    }
    if (Clock::now() >= deadline) return;
  }
}

bool Communicator::wait_wake_or_hangup(int wake_fd, std::chrono::microseconds timeout) const {
  std::vector<pollfd> fds;
  if (wake_fd >= 0) fds.push_back({wake_fd, POLLIN, 0});
  const size_t first_link = fds.size();
  watch_hangups(links_, rank_, fds);
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const timespec wait_for{static_cast<time_t>(seconds.count()),
                          static_cast<long>((timeout - seconds) / std::chrono::nanoseconds(1))};
  if (::ppoll(fds.data(), fds.size(), &wait_for, nullptr) <= 0) return false;  // EINTR: as woken
  return std::any_of(fds.begin() + static_cast<std::ptrdiff_t>(first_link), fds.end(),
                     [](const pollfd& fd) { return (fd.revents & detail::kHangupEvents) != 0; });
}

std::optional<PeerError> Communicator::hung_up_peer() const {
  std::vector<pollfd> fds;
  const std::vector<int> peers = watch_hangups(links_, rank_, fds);
  if (::poll(fds.data(), fds.size(), 0) <= 0) return std::nullopt;  // one look, no wait
  for (size_t i = 0; i < fds.size(); ++i) {
    if ((fds[i].revents & detail::kHangupEvents) != 0) {
      return detail::peer_closed_error(*links_[static_cast<size_t>(peers[i])]);
    }
  }
  return std::nullopt;
}

void Communicator::abort() {
  for (int r = 0; r < size(); ++r) {
    if (r != rank_ && links_[static_cast<size_t>(r)] != nullptr) links_[r]->close();
  }
}

}  // namespace kolo::comm
