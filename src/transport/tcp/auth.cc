// Mutual HMAC-SHA256 challenge-response (see auth.h for the wire format).
#include "transport/tcp/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "base/errors.h"

namespace kolo::transport {

namespace {

constexpr size_t kNonceSize = 32;
constexpr size_t kMacSize = 32;
constexpr char kMagic[8] = {'K', 'O', 'L', 'O', 'A', 'U', 'v', '1'};
constexpr std::string_view kClientRole = "kolo-client";
constexpr std::string_view kServerRole = "kolo-server";

using Nonce = std::array<uint8_t, kNonceSize>;
using Mac = std::array<uint8_t, kMacSize>;

void random_bytes(uint8_t* out, size_t size) {
  if (RAND_bytes(out, static_cast<int>(size)) != 1) {
    throw Error("OpenSSL RAND_bytes failed: cannot draw a nonce or secret");
  }
}

// HMAC(secret, role || first || second). The role keeps a client proof from ever being usable as
// a server proof (and vice versa), even when the nonces are chosen by an attacker.
Mac proof(const Secret& secret, std::string_view role, const uint8_t* first,
          const uint8_t* second) {
  std::array<uint8_t, 11 + 2 * kNonceSize> message{};
  static_assert(kClientRole.size() == 11 && kServerRole.size() == 11);
  std::memcpy(message.data(), role.data(), role.size());
  std::memcpy(message.data() + role.size(), first, kNonceSize);
  std::memcpy(message.data() + role.size() + kNonceSize, second, kNonceSize);
  Mac mac{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), secret.bytes().data(), static_cast<int>(secret.bytes().size()),
           message.data(), message.size(), mac.data(), &length) == nullptr ||
      length != kMacSize) {
    throw Error("OpenSSL HMAC-SHA256 failed during the authentication handshake");
  }
  return mac;
}

bool same(const Mac& a, const uint8_t* b) { return CRYPTO_memcmp(a.data(), b, kMacSize) == 0; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Moves one handshake field. A closed connection means the other side refused us (or is not a
// kolo peer): that is an authentication failure, not a peer failure.
template <typename Transfer>
void transfer_field(Transfer transfer, const std::string& who, const char* field) {
  try {
    transfer();
  } catch (const PeerError& e) {
    throw ProtocolError("authentication with " + who + " failed: connection closed at the " +
                        field + " (wrong job secret on one side, or not a kolo peer): " + e.what());
  } catch (const TimeoutError& e) {
    throw TimeoutError("authentication with " + who + " timed out at the " + field + ": " +
                       e.what());
  }
}

void read_field(const Socket& socket, uint8_t* data, size_t size, const Deadline& deadline,
                const std::string& who, const char* field) {
  transfer_field([&] { read_all(socket, data, size, deadline, who); }, who, field);
}

void write_field(const Socket& socket, const uint8_t* data, size_t size, const Deadline& deadline,
                 const std::string& who, const char* field) {
  transfer_field([&] { write_all(socket, data, size, deadline, who); }, who, field);
}

}  // namespace

Secret Secret::generate() {
  Secret secret;
  random_bytes(secret.bytes_.data(), secret.bytes_.size());
  return secret;
}

Secret Secret::from_hex(const std::string& hex) {
  // Never echo the text: it is (almost) the secret.
  if (hex.size() != 2 * kSize) {
    throw InvalidArgument("job secret must be " + std::to_string(2 * kSize) + " hex digits, got " +
                          std::to_string(hex.size()) + " characters");
  }
  Secret secret;
  for (size_t i = 0; i < kSize; ++i) {
    const int high = hex_value(hex[2 * i]);
    const int low = hex_value(hex[2 * i + 1]);
    if (high < 0 || low < 0) {
      throw InvalidArgument("job secret must be hex digits only (bad character at position " +
                            std::to_string(high < 0 ? 2 * i : 2 * i + 1) + ")");
    }
    secret.bytes_[i] = static_cast<uint8_t>(high * 16 + low);
  }
  return secret;
}

std::string Secret::to_hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * kSize);
  for (uint8_t byte : bytes_) {
    hex.push_back(kDigits[byte >> 4]);
    hex.push_back(kDigits[byte & 0xf]);
  }
  return hex;
}

ServerHandshake::ServerHandshake(const Secret& secret) : secret_(secret) {
  std::memcpy(greeting_.data(), kMagic, sizeof(kMagic));
  random_bytes(greeting_.data() + sizeof(kMagic), kNonceSize);
}

std::array<uint8_t, kServerProofSize> ServerHandshake::verify(
    std::span<const uint8_t, kClientProofSize> client_proof, const std::string& who) const {
  const uint8_t* server_nonce = greeting_.data() + sizeof(kMagic);
  const uint8_t* client_nonce = client_proof.data();
  const Mac expected = proof(secret_, kClientRole, server_nonce, client_nonce);
  if (!same(expected, client_proof.data() + kNonceSize)) {
    throw ProtocolError("authentication of " + who +
                        " failed: it does not know the job secret (wrong secret, a process from "
                        "another job, or not a kolo peer)");
  }
  return proof(secret_, kServerRole, client_nonce, server_nonce);
}

void authenticate_server(const Socket& socket, const Secret& secret, Deadline deadline,
                         const std::string& who) {
  ServerHandshake handshake(secret);
  write_field(socket, handshake.greeting().data(), kGreetingSize, deadline, who, "greeting");
  std::array<uint8_t, kClientProofSize> client_proof{};
  read_field(socket, client_proof.data(), client_proof.size(), deadline, who, "client's proof");
  std::array<uint8_t, kServerProofSize> server_proof{};
  try {
    server_proof = handshake.verify(client_proof, who);
  } catch (const ProtocolError&) {
    // Let the client see the refusal now rather than when the caller gets round to closing.
    ::shutdown(socket.fd(), SHUT_RDWR);
    throw;
  }
  write_field(socket, server_proof.data(), server_proof.size(), deadline, who, "server's proof");
}

void authenticate_client(const Socket& socket, const Secret& secret, Deadline deadline,
                         const std::string& who) {
  std::array<uint8_t, kGreetingSize> greeting{};
  read_field(socket, greeting.data(), greeting.size(), deadline, who, "greeting");
  if (std::memcmp(greeting.data(), kMagic, sizeof(kMagic)) != 0) {
    ::shutdown(socket.fd(), SHUT_RDWR);
    throw ProtocolError("authentication with " + who +
                        " failed: it did not greet with the kolo handshake (not a kolo peer, or "
                        "an incompatible kolo version)");
  }
  const uint8_t* server_nonce = greeting.data() + sizeof(kMagic);
  std::array<uint8_t, kClientProofSize> client_proof{};
  random_bytes(client_proof.data(), kNonceSize);
  const Mac mine = proof(secret, kClientRole, server_nonce, client_proof.data());
  std::copy(mine.begin(), mine.end(), client_proof.begin() + kNonceSize);
  write_field(socket, client_proof.data(), client_proof.size(), deadline, who, "client's proof");

  std::array<uint8_t, kServerProofSize> server_proof{};
  read_field(socket, server_proof.data(), server_proof.size(), deadline, who, "server's proof");
  const Mac expected = proof(secret, kServerRole, client_proof.data(), server_nonce);
  if (!same(expected, server_proof.data())) {
    ::shutdown(socket.fd(), SHUT_RDWR);
    throw ProtocolError("authentication of " + who +
                        " failed: it does not know the job secret (wrong secret, or a process "
                        "from another job listening at that address)");
  }
}

}  // namespace kolo::transport
