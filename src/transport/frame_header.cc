#include "transport/frame_header.h"

#include "base/errors.h"

namespace kolo::transport {

void encode_frame_header(uint64_t length, std::byte (&header)[kFrameHeaderSize]) {
  for (size_t i = 0; i < kFrameHeaderSize; ++i) {
    header[i] = static_cast<std::byte>((length >> (8 * i)) & 0xff);
  }
}

uint64_t decode_frame_header(const std::byte (&header)[kFrameHeaderSize], uint64_t limit,
                             const std::string& who) {
  uint64_t length = 0;
  for (size_t i = 0; i < kFrameHeaderSize; ++i) {
    length |= static_cast<uint64_t>(header[i]) << (8 * i);
  }
  if (length > limit) {
    throw ProtocolError("frame from " + who + " announces " + std::to_string(length) +
                        " bytes, over the limit of " + std::to_string(limit) +
                        " (corrupt stream, or not a kolo peer)");
  }
  return length;
}

}  // namespace kolo::transport
