#include "transport/tcp/framing.h"

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

void write_frame(const Socket& socket, std::string_view payload, Deadline deadline,
                 const std::string& who) {
  std::byte header[kFrameHeaderSize];
  encode_frame_header(payload.size(), header);
  write_all(socket, header, sizeof(header), deadline, who);
  write_all(socket, payload.data(), payload.size(), deadline, who);
}

std::string read_frame(const Socket& socket, uint64_t limit, Deadline deadline,
                       const std::string& who) {
  std::byte header[kFrameHeaderSize];
  read_all(socket, header, sizeof(header), deadline, who);
  const uint64_t length = decode_frame_header(header, limit, who);
  std::string payload(static_cast<size_t>(length), '\0');
  read_all(socket, payload.data(), payload.size(), deadline, who);
  return payload;
}

}  // namespace kolo::transport
