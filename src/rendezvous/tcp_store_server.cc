// TcpStoreServer: one thread, one poll loop over the listener, a wake-up eventfd and every client.
// Nothing in the loop blocks: handshakes and requests advance as bytes arrive, a get/wait for a
// missing key is parked until a set/add provides it or its timeout passes.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <list>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "rendezvous/server_connection.h"
#include "rendezvous/tcp_store.h"
#include "rendezvous/timeouts.h"

namespace kolo::rendezvous {

namespace {
// How long a new connection may take to prove the secret before it is dropped.
constexpr Duration kHandshakeTimeout = std::chrono::seconds(5);
// After accept fails for lack of descriptors, leave the listener alone this long (no busy loop).
constexpr Duration kAcceptPause = std::chrono::milliseconds(100);
}  // namespace

class TcpStoreServer::Impl {
 public:
  Impl(transport::Socket listener, transport::Secret secret, const Logger& logger)
      : listener_(std::move(listener)), secret_(secret), logger_(logger) {
    wake_ = transport::Socket(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wake_.valid()) throw SystemError("eventfd", errno, "rendezvous server");
    thread_ = std::thread([this] { run(); });
  }

  ~Impl() {
    const uint64_t one = 1;
    // Cannot fail short of a full counter, which one write per server never reaches.
    [[maybe_unused]] ssize_t written = ::write(wake_.fd(), &one, sizeof(one));
    thread_.join();
  }

  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

 private:
  using Connections = std::list<ServerConnection>;

  void run() {
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      fds.push_back({wake_.fd(), POLLIN, 0});
      const bool listening = Clock::now() >= listener_paused_until_;
      fds.push_back({listener_.fd(), static_cast<short>(listening ? POLLIN : 0), 0});
      for (const auto& connection : connections_) {
        fds.push_back({connection.fd(), connection.poll_events(), 0});
      }
      const int ready = ::poll(fds.data(), fds.size(), next_timeout_ms());
      if (ready < 0 && errno != EINTR) {
        logger_.error("rendezvous server: poll failed: {}", SystemError("poll", errno, "").what());
        return;
      }
      if (fds[0].revents != 0) return;  // the destructor asks us to stop
      try {
        if (ready > 0 && (fds[1].revents & POLLIN) != 0) accept_all();
        size_t index = 2;
        for (auto it = connections_.begin(); it != connections_.end(); ++index) {
          // New connections were appended after `fds` was built: they have no entry yet.
          const short revents = index < fds.size() ? fds[index].revents : 0;
          it = handle_events(it, revents);
        }
        expire_deadlines();
      } catch (const std::exception& e) {
        // Out of memory or descriptors: keep serving the clients that are still fine.
        logger_.error("rendezvous server: {}", e.what());
      }
    }
  }

  int next_timeout_ms() const {
    auto next = Clock::time_point::max();
    for (const auto& connection : connections_) {
      if (!connection.authenticated()) next = std::min(next, connection.handshake_deadline());
      if (connection.parked()) next = std::min(next, connection.parked()->deadline);
    }
    if (Clock::now() < listener_paused_until_) next = std::min(next, listener_paused_until_);
    if (next == Clock::time_point::max()) return -1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
    return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
  }

  void accept_all() {
    for (;;) {
      transport::Socket socket(
          ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (!socket.valid()) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
        logger_.error("rendezvous server: accept failed, pausing new connections: {}",
                      SystemError("accept", errno, "").what());
        listener_paused_until_ = Clock::now() + kAcceptPause;
        return;
      }
      std::string peer = transport::peer_address(socket);
      try {
        transport::set_nodelay(socket);
      } catch (const Error& e) {
        logger_.warn("rendezvous server: dropped connection from {}: {}", peer, e.what());
        continue;
      }
      logger_.debug("rendezvous server: connection from {}", peer);
      connections_.emplace_back(std::move(socket), std::move(peer), secret_,
                                Clock::now() + kHandshakeTimeout);
      if (!connections_.back().flush()) connections_.pop_back();  // the greeting
    }
  }

  Connections::iterator handle_events(Connections::iterator it, short revents) {
    ServerConnection& connection = *it;
    try {
      // Clients never half-close: a hang-up means the client is gone (its parked request too).
      if ((revents & (POLLERR | POLLHUP | POLLRDHUP)) != 0) {
        return drop(it, "closed the connection");
      }
      if ((revents & POLLIN) != 0 && !connection.on_readable()) {
        return drop(it, "closed the connection");
      }
      if (!connection.flush()) return drop(it, "connection broke while sending");
      serve(connection);
      if (!connection.flush()) return drop(it, "connection broke while sending");
      return std::next(it);
    } catch (const Error& e) {
      // Failed authentication, an oversized or malformed request: say who and why, then drop.
      logger_.warn("rendezvous server: dropped connection from {}: {}", connection.peer(),
                   e.what());
      return connections_.erase(it);
    }
  }

  Connections::iterator drop(Connections::iterator it, const char* why) {
    if (!it->authenticated()) {
      logger_.warn("rendezvous server: {} {} before authenticating", it->peer(), why);
    } else {
      logger_.debug("rendezvous server: {} {}", it->peer(), why);
    }
    return connections_.erase(it);
  }

  void serve(ServerConnection& connection) {
    while (auto request = connection.next_request()) {
      handle(connection, std::move(*request));
      if (!connection.flush()) return;  // the caller's flush reports the broken connection
    }
  }

  void handle(ServerConnection& connection, wire::Request request) {
    switch (request.op) {
      case wire::Op::set:
        values_[request.keys[0]] = std::move(request.value);
        connection.reply({wire::ReplyKind::ok, {}, 0, {}});
        wake_waiters();
        return;
      case wire::Op::add:
        try {
          const int64_t sum =
              add_to_counter(request.keys[0], values_[request.keys[0]], request.delta);
          connection.reply({wire::ReplyKind::number, {}, sum, {}});
          wake_waiters();
        } catch (const InvalidArgument& e) {
          connection.reply({wire::ReplyKind::error, e.what(), 0, {}});
        }
        return;
      case wire::Op::get:
      case wire::Op::wait:
        if (!try_answer(connection, request)) {
          const auto timeout = std::chrono::milliseconds(request.timeout_ms);
          connection.park(std::move(request), Clock::now() + clamp_timeout(timeout));
        }
        return;
    }
  }

  // Answers a get/wait whose keys are all present; false if it must wait.
  bool try_answer(ServerConnection& connection, const wire::Request& request) {
    for (const auto& key : request.keys) {
      if (values_.count(key) == 0) return false;
    }
    if (request.op == wire::Op::get) {
      connection.reply({wire::ReplyKind::value, values_.at(request.keys[0]), 0, {}});
    } else {
      connection.reply({wire::ReplyKind::ok, {}, 0, {}});
    }
    return true;
  }

  void wake_waiters() {
    for (auto& connection : connections_) {
      if (connection.parked() && try_answer(connection, connection.parked()->request)) {
        connection.unpark();
        // Sent (and the next pipelined request served) when the loop reaches this connection.
      }
    }
  }

  void expire_deadlines() {
    const auto now = Clock::now();
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (!it->authenticated() && now >= it->handshake_deadline()) {
        logger_.warn(
            "rendezvous server: dropped connection from {}: no authentication within "
            "{} s",
            it->peer(), std::chrono::duration<double>(kHandshakeTimeout).count());
        it = connections_.erase(it);
        continue;
      }
      if (it->parked() && now >= it->parked()->deadline) {
        wire::Reply reply{wire::ReplyKind::timeout, {}, 0, {}};
        for (const auto& key : it->parked()->request.keys) {
          if (values_.count(key) == 0) reply.missing_keys.push_back(key);
        }
        it->unpark();
        it->reply(reply);
        if (!it->flush()) {
          it = drop(it, "connection broke while sending");
          continue;
        }
      }
      ++it;
    }
  }

  transport::Socket listener_;
  transport::Secret secret_;
  const Logger& logger_;
  transport::Socket wake_;  // an eventfd, owned like a socket so it is closed with the server
  Connections connections_;
  std::map<std::string, std::string> values_;
  Clock::time_point listener_paused_until_{};
  std::thread thread_;
};

TcpStoreServer::TcpStoreServer(const std::string& bind_host, uint16_t port,
                               transport::Secret secret, const Logger& logger) {
  transport::Socket listener = transport::listen_tcp(bind_host, port);
  port_ = transport::local_port(listener);
  impl_ = std::make_unique<Impl>(std::move(listener), secret, logger);
}

TcpStoreServer::~TcpStoreServer() = default;

}  // namespace kolo::rendezvous
