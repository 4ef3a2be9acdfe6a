// Length-prefixed frames for control messages (negotiation, rendezvous). The 8-byte little-endian
// length is checked against a limit before anything is allocated, so a corrupt or hostile length
// fails with a ProtocolError instead of allocating gigabytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "transport/socket.h"

namespace kolo::transport {

inline constexpr size_t kFrameHeaderSize = 8;
// Default ceiling for one control frame; data transfers are not framed.
inline constexpr uint64_t kDefaultFrameLimit = 256ull << 20;

void encode_frame_header(uint64_t length, std::byte (&header)[kFrameHeaderSize]);
// Returns the length; throws ProtocolError naming `who` if it exceeds `limit`.
uint64_t decode_frame_header(const std::byte (&header)[kFrameHeaderSize], uint64_t limit,
                             const std::string& who);

// Blocking whole-frame transfers over a socket (handshakes, the rendezvous client), bounded by
// the deadline like write_all/read_all. read_frame allocates only after the length passed `limit`.
void write_frame(const Socket& socket, std::string_view payload, Deadline deadline,
                 const std::string& who);
std::string read_frame(const Socket& socket, uint64_t limit, Deadline deadline,
                       const std::string& who);

}  // namespace kolo::transport
