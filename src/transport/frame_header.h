// The length prefix of a control frame (negotiation, rendezvous), whatever carries it: a TCP
// socket, a shared-memory ring or the rendezvous store's connection. The 8-byte little-endian
// length is checked against a limit before anything is allocated, so a corrupt or hostile length
// fails with a ProtocolError instead of allocating gigabytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kolo::transport {

inline constexpr size_t kFrameHeaderSize = 8;
// Default ceiling for one control frame; data transfers are not framed.
inline constexpr uint64_t kDefaultFrameLimit = 256ull << 20;

void encode_frame_header(uint64_t length, std::byte (&header)[kFrameHeaderSize]);
// Returns the length; throws ProtocolError naming `who` if it exceeds `limit`.
uint64_t decode_frame_header(const std::byte (&header)[kFrameHeaderSize], uint64_t limit,
                             const std::string& who);

}  // namespace kolo::transport
