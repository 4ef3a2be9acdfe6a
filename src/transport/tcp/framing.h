// Whole control frames (transport/frame_header.h) over a blocking socket: the handshakes and the
// rendezvous client.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "transport/frame_header.h"
#include "transport/tcp/socket.h"

namespace kolo::transport {

// Bounded by the deadline like write_all/read_all. read_frame allocates only after the length
// passed `limit`.
void write_frame(const Socket& socket, std::string_view payload, Deadline deadline,
                 const std::string& who);
std::string read_frame(const Socket& socket, uint64_t limit, Deadline deadline,
                       const std::string& who);

}  // namespace kolo::transport
