#include "transport/frame_header.h"

#include "base/byte_codec.h"
#include "base/errors.h"

namespace kolo::transport {

void encode_frame_header(uint64_t length, std::byte (&header)[kFrameHeaderSize]) {
  store_little_endian(header, length, kFrameHeaderSize);
}

uint64_t decode_frame_header(const std::byte (&header)[kFrameHeaderSize], uint64_t limit,
                             const std::string& who) {
  const uint64_t length = load_little_endian(header, kFrameHeaderSize);
  if (length > limit) {
    throw ProtocolError("frame from " + who + " announces " + std::to_string(length) +
                        " bytes, over the limit of " + std::to_string(limit) +
                        " (corrupt stream, or not a kolo peer)");
  }
  return length;
}

}  // namespace kolo::transport
