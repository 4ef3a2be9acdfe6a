// Helpers shared by the socket .cc files of this folder; not part of the transport interface.
#pragma once

#include <sys/socket.h>

#include <string>

#include "base/clock.h"

namespace kolo::transport::detail {

// "1.2.3.4:80" or "[::1]:80"; "unknown address" for families other than IPv4/IPv6.
std::string format_sockaddr(const sockaddr* address, socklen_t length);

// Waits until `fd` reports one of `events` (or an error/hang-up) or the deadline passes, retrying
// on EINTR. Returns false at the deadline; `context` is added to a SystemError from poll.
bool poll_until(int fd, short events, const Deadline& deadline, const std::string& context);

}  // namespace kolo::transport::detail
