#include "transport/link.h"

#include <poll.h>
#include <sys/socket.h>

namespace kolo::transport {

Link::WaitArm Link::arm_wait(bool want_send, bool want_recv) {
  return {(want_send ? POLLOUT : 0) | (want_recv ? POLLIN : 0), false};
}

bool Link::has_pending_input() const {
  std::byte probe;
  // MSG_PEEK leaves the byte in place; 0 means end of stream, -1 an error or nothing waiting.
  return fd() >= 0 && ::recv(fd(), &probe, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

}  // namespace kolo::transport
