#include "transport/tcp/framing.h"

namespace kolo::transport {

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
