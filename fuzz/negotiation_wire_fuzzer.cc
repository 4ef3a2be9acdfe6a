// Negotiation messages as they arrive from other ranks (negotiation/wire.h): request lists
// gathered on the coordinator, response lists broadcast from it. Both decoders see every input
// (the kind byte decides which one gets past the header). Whatever decodes must encode back to
// the same bytes: the format has one encoding per message, so a difference means a field was
// read wrongly (silent wrong data). A decoded request list then goes where a real one goes, the
// coordinator (as every rank's list), whose checks must refuse what they cannot use with an
// error response, not with undefined behaviour.
#include <algorithm>
#include <span>

#include "fuzz/fuzz_support.h"
#include "negotiation/coordinator.h"
#include "negotiation/wire.h"

namespace {

constexpr int kRanks = 2;

// Rank r submits the decoded list (its requests stamped with r, as the controller stamps them).
void coordinate(const kolo::negotiation::RequestList& list) {
  using namespace kolo::negotiation;
  Coordinator coordinator(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    RequestList mine = list;
    for (Request& request : mine.requests) request.rank = rank;
    coordinator.add(mine, rank);
  }
  const ResponseList responses = coordinator.take_responses();
  const auto bytes = encode(responses);
  // Compared as bytes: a NaN scale factor (which a peer may send) is never == itself.
  kolo::fuzz::require(encode(decode_response_list(bytes, 0)) == bytes, "responses round trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kolo;
  const auto bytes = std::as_bytes(std::span(data, size));
  auto same_bytes = [&](const std::vector<std::byte>& encoded) {
    return std::ranges::equal(encoded, bytes);
  };
  if (auto list =
          fuzz::decode_or_refuse([&] { return negotiation::decode_request_list(bytes, 1); })) {
    fuzz::require(same_bytes(negotiation::encode(*list)), "request list re-encodes identically");
    for (const auto& request : list->requests) {
      fuzz::require(std::ranges::all_of(request.shape, [](int64_t d) { return d >= 0; }),
                    "no negative dimension gets through");
    }
    kolo::fuzz::refuses_cleanly([&] { coordinate(*list); });
  }
  if (auto list =
          fuzz::decode_or_refuse([&] { return negotiation::decode_response_list(bytes, 0); })) {
    fuzz::require(same_bytes(negotiation::encode(*list)), "response list re-encodes identically");
  }
  return 0;
}
