// The authentication handshake (transport/tcp/auth.h) facing a peer that sends arbitrary bytes:
// as client (the input is the server's greeting and proof), as server (the input is the client's
// proof) and the poll-driven ServerHandshake. A forged proof must never be accepted: the nonces
// are fresh random bytes, so no input can carry a valid HMAC, and every side must refuse with a
// kolo::Error. Also the job secret's hex form, which comes from the environment.
#include <sys/socket.h>

#include <chrono>

#include "fuzz/fuzz_support.h"
#include "transport/tcp/auth.h"
#include "transport/tcp/socket.h"

namespace {

using namespace kolo;

const transport::Secret& secret() {
  static const transport::Secret value = transport::Secret::generate();
  return value;
}

// A connected pair whose `peer` end already holds `bytes` and is closed for writing.
struct FedSocket {
  transport::Socket mine;
  transport::Socket peer;
};

FedSocket feed(const uint8_t* bytes, size_t size) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
  FedSocket pair{transport::Socket(fds[0]), transport::Socket(fds[1])};
  transport::write_all(pair.peer, bytes, size, Deadline(std::chrono::seconds(10)), "fuzz");
  ::shutdown(pair.peer.fd(), SHUT_WR);  // end-of-stream after the input; our writes still land
  return pair;
}

// Runs one side of the handshake against the input; it must refuse.
template <typename Handshake>
void never_accepts(Handshake&& handshake) {
  bool accepted = false;
  fuzz::refuses_cleanly([&] {
    handshake();
    accepted = true;
  });
  fuzz::require(!accepted, "handshake accepted a forged proof");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const Deadline deadline(std::chrono::seconds(10));

  {
    FedSocket pair = feed(data, size);
    never_accepts([&] { transport::authenticate_client(pair.mine, secret(), deadline, "fuzz"); });
  }
  {
    FedSocket pair = feed(data, size);
    never_accepts([&] { transport::authenticate_server(pair.mine, secret(), deadline, "fuzz"); });
  }
  if (size >= transport::kClientProofSize) {
    const transport::ServerHandshake handshake(secret());
    never_accepts([&] {
      (void)handshake.verify(
          std::span<const uint8_t, transport::kClientProofSize>(data, transport::kClientProofSize),
          "fuzz");
    });
  }
  fuzz::refuses_cleanly([&] {
    const std::string hex(fuzz::as_text(data, size));
    const auto parsed = transport::Secret::from_hex(hex);
    fuzz::require(transport::Secret::from_hex(parsed.to_hex()).bytes() == parsed.bytes(),
                  "secret hex round trip");
  });
  return 0;
}
