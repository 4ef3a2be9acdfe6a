// The rendezvous store over TCP. TcpStoreServer runs in the launcher (one thread, poll loop, many
// clients); every connection must pass the HMAC handshake with the job secret before a request is
// read. Requests and replies are length-checked frames (transport/frame_header.h).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "base/logger.h"
#include "rendezvous/store.h"
#include "transport/tcp/auth.h"
#include "transport/tcp/socket.h"

namespace kolo::rendezvous {

namespace wire {
struct Request;
struct Reply;
}  // namespace wire

class TcpStoreServer {
 public:
  // Listens on bind_host:port (port 0 picks a free one) and serves until destroyed. `logger` must
  // outlive the server; refused clients (wrong secret, malformed requests) are logged as warnings.
  TcpStoreServer(const std::string& bind_host, uint16_t port, transport::Secret secret,
                 const Logger& logger);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  [[nodiscard]] uint16_t port() const { return port_; }

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

class TcpStore final : public Store {
 public:
  // Connects and authenticates, retrying until `connect_timeout`. Throws TimeoutError if the
  // server never answers, ProtocolError if it does not know the secret. After a broken
  // connection (PeerError) every later request fails too: the server is gone. A reply that takes
  // longer than `connect_timeout` beyond the time the server may hold the request (a get's wait)
  // means a hung or overloaded server: TimeoutError naming it, within the caller's timeout.
  TcpStore(const transport::Endpoint& server, const transport::Secret& secret,
           Duration connect_timeout);
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Duration timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;

 private:
  // Sends one request and reads its reply; `wait_time` is how long the server may hold it.
  wire::Reply exchange(const wire::Request& request, Duration wait_time);

  std::mutex mutex_;  // one request at a time on the connection
  transport::Socket socket_;
  std::string server_description_;
  Duration transfer_timeout_;
};

}  // namespace kolo::rendezvous
