// The bytes of negotiation messages: RequestList (every rank -> coordinator) and ResponseList
// (coordinator -> every rank). Little-endian, fixed-width fields, a kind byte and a version byte
// up front. Decoding trusts nothing: every length and count is checked against the bytes that
// remain before anything is allocated, every enum value against its range, and trailing bytes
// are refused, so a corrupt or hostile frame becomes a ProtocolError naming the sender, never a
// crash or a huge allocation.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "negotiation/message.h"

namespace kolo::negotiation {

// 3: join and process-set requests carry their arguments in `args` (no longer in root/shape).
// Every rank checks its peers' version at bootstrap (core/bootstrap.cc), so a mixed job fails
// there naming both versions instead of at its first collective.
inline constexpr uint8_t kWireVersion = 3;

[[nodiscard]] std::vector<std::byte> encode(const RequestList& list);
[[nodiscard]] std::vector<std::byte> encode(const ResponseList& list);

// `from_rank` only names the sender in error messages. Throws ProtocolError
// ("malformed request list from rank 2: ...").
[[nodiscard]] RequestList decode_request_list(std::span<const std::byte> bytes, int from_rank);
[[nodiscard]] ResponseList decode_response_list(std::span<const std::byte> bytes, int from_rank);

}  // namespace kolo::negotiation
