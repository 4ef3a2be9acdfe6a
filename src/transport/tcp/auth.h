// The job secret and the handshake every connection performs before anything else is read:
// mutual HMAC-SHA256 challenge-response. Each side sends a fresh random nonce and proves it knows
// the secret by returning HMAC(secret, role || their nonce || our nonce); the secret itself never
// crosses the wire and a recorded exchange cannot be replayed.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "base/clock.h"
#include "transport/tcp/socket.h"

namespace kolo::transport {

class Secret {
 public:
  static constexpr size_t kSize = 32;
  static Secret generate();  // from OpenSSL's RAND_bytes
  // 64 hex digits; throws InvalidArgument on anything else.
  static Secret from_hex(const std::string& hex);
  [[nodiscard]] std::string to_hex() const;
  [[nodiscard]] const std::array<uint8_t, kSize>& bytes() const { return bytes_; }

 private:
  std::array<uint8_t, kSize> bytes_{};
};

// The wire format, fixed-size fields only, so nothing of variable length is read before the peer
// has proved the secret:
//   server -> client  greeting:      magic "KOLOAUv1" (8 bytes) || server nonce (32)
//   client -> server  client proof:  client nonce (32) || HMAC(secret, "kolo-client" || sn || cn)
//   server -> client  server proof:  HMAC(secret, "kolo-server" || cn || sn)
// A server that rejects the client closes the connection without answering.
inline constexpr size_t kGreetingSize = 8 + 32;
inline constexpr size_t kClientProofSize = 32 + 32;
inline constexpr size_t kServerProofSize = 32;

// The server's half of the handshake without any I/O, so a poll loop (the rendezvous server) can
// drive many handshakes at once; authenticate_server drives it with blocking reads.
class ServerHandshake {
 public:
  explicit ServerHandshake(const Secret& secret);  // draws a fresh nonce
  [[nodiscard]] const std::array<uint8_t, kGreetingSize>& greeting() const { return greeting_; }
  // Checks the client's proof in constant time and returns the server's proof; throws
  // ProtocolError naming `who` if the client does not know the secret.
  [[nodiscard]] std::array<uint8_t, kServerProofSize> verify(
      std::span<const uint8_t, kClientProofSize> client_proof, const std::string& who) const;

 private:
  Secret secret_;
  std::array<uint8_t, kGreetingSize> greeting_{};
};

// Both throw ProtocolError when the peer fails to prove the secret (or sends garbage), and
// TimeoutError at the deadline. `who` names the peer for the message.
void authenticate_client(const Socket& socket, const Secret& secret, Deadline deadline,
                         const std::string& who);
void authenticate_server(const Socket& socket, const Secret& secret, Deadline deadline,
                         const std::string& who);

}  // namespace kolo::transport
