// Internal to comm/: how the communicator tells a dead peer from a peer that merely finished.
// POLLRDHUP/POLLHUP on a link is only fatal when nothing we still need can come from it: a peer
// that wrote its last bytes and exited cleanly also hangs up, and those bytes are still ours to
// read (the read that reaches end-of-stream reports the closure instead).
#pragma once

#include <poll.h>

#include <chrono>
#include <string>

#include "base/errors.h"
#include "transport/link.h"

namespace kolo::comm::detail {

inline constexpr short kHangupEvents = POLLRDHUP | POLLHUP | POLLERR | POLLNVAL;

// The error every survivor reports when `link`'s peer is gone.
PeerError peer_closed_error(const transport::Link& link);

// "30 s" or "1500 ms", for messages about the peer timeout.
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace kolo::comm::detail
