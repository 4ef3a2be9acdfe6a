#include "comm/link_watch.h"

#include <sys/socket.h>

namespace kolo::comm::detail {

bool has_unread_bytes(int fd) {
  std::byte probe;
  // MSG_PEEK leaves the byte in place; 0 means end of stream, -1 an error or nothing waiting.
  return ::recv(fd, &probe, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

PeerError peer_closed_error(const transport::Link& link) {
  return PeerError(link.peer_rank(), link.peer_description() +
                                         " closed the connection (process exited or was killed)");
}

}  // namespace kolo::comm::detail
