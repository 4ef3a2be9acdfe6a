// The rendezvous store's messages (rendezvous/store_protocol.h): requests as the server reads
// them from any client that passed the handshake, replies as a client reads them from the
// server. The format has one encoding per message, so whatever decodes must encode back to the
// same bytes, and decoded requests must be within the limits the server relies on.
#include "fuzz/fuzz_support.h"
#include "rendezvous/store_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kolo;
  namespace wire = rendezvous::wire;
  const std::string_view payload = fuzz::as_text(data, size);
  if (auto request = fuzz::decode_or_refuse([&] { return wire::decode_request(payload); })) {
    bool within_limits = true;
    try {
      wire::check_limits(*request);
    } catch (const InvalidArgument&) {
      within_limits = false;
    }
    fuzz::require(within_limits, "a decoded request is within the store's limits");
    fuzz::require(request->op == wire::Op::wait || request->keys.size() == 1,
                  "exactly one key unless wait");
    fuzz::require(wire::encode(*request) == payload, "request re-encodes identically");
    (void)wire::describe(*request);
  }
  if (auto reply = fuzz::decode_or_refuse([&] { return wire::decode_reply(payload); })) {
    fuzz::require(wire::encode(*reply) == payload, "reply re-encodes identically");
  }
  return 0;
}
