// One client of the TcpStoreServer, driven by the server's poll loop without ever blocking:
// first the HMAC handshake (exactly the fixed-size proof is read, nothing more, until it checks
// out), then framed requests answered in order. While a request is parked (a get or wait for a
// key not yet set), no further bytes are read from this client.
#pragma once

#include <optional>
#include <string>

#include "base/clock.h"
#include "rendezvous/store_protocol.h"
#include "transport/tcp/auth.h"
#include "transport/tcp/socket.h"

namespace kolo::rendezvous {

class ServerConnection {
 public:
  // `socket` is connected and non-blocking; the handshake must finish by `handshake_deadline`.
  ServerConnection(transport::Socket socket, std::string peer, const transport::Secret& secret,
                   Clock::time_point handshake_deadline);

  [[nodiscard]] int fd() const { return socket_.fd(); }
  [[nodiscard]] const std::string& peer() const { return peer_; }
  [[nodiscard]] bool authenticated() const { return authenticated_; }
  [[nodiscard]] Clock::time_point handshake_deadline() const { return handshake_deadline_; }

  // The poll(2) events this connection waits for now.
  [[nodiscard]] short poll_events() const;

  // Reads what is available (never more than the handshake field while unauthenticated). Returns
  // false when the peer closed or the connection broke. Throws ProtocolError when the handshake
  // fails or a frame header is over the limit.
  bool on_readable();
  // Sends what is queued; false when the connection broke.
  bool flush();

  // The next complete request, if no request is parked and all earlier replies were sent.
  // Throws ProtocolError for a malformed request.
  std::optional<wire::Request> next_request();

  void reply(const wire::Reply& reply);

  // A request waiting for keys, and when it gives up.
  struct Parked {
    wire::Request request;
    Clock::time_point deadline;
  };
  void park(wire::Request request, Clock::time_point deadline);
  [[nodiscard]] const std::optional<Parked>& parked() const { return parked_; }
  void unpark() { parked_.reset(); }

 private:
  [[nodiscard]] bool busy() const { return parked_.has_value() || !outbox_.empty(); }
  bool read_into_inbox(size_t max_bytes);
  void finish_handshake();

  transport::Socket socket_;
  std::string peer_;
  transport::ServerHandshake handshake_;
  Clock::time_point handshake_deadline_;
  bool authenticated_ = false;
  std::string inbox_;   // received bytes not yet parsed
  std::string outbox_;  // reply bytes not yet sent
  size_t outbox_sent_ = 0;
  std::optional<Parked> parked_;
};

}  // namespace kolo::rendezvous
