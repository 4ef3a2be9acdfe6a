// A Link over a connected stream socket: TCP between hosts (after authentication) or an AF_UNIX
// socket pair (in-process tests). The socket is switched to non-blocking mode.
#pragma once

#include <memory>
#include <string>

#include "transport/link.h"
#include "transport/tcp/socket.h"

namespace kolo::transport {

std::unique_ptr<Link> make_socket_link(Socket socket, int peer_rank, std::string description);

// Two connected AF_UNIX stream sockets, for tests that run ranks as threads.
std::pair<Socket, Socket> socket_pair();

}  // namespace kolo::transport
