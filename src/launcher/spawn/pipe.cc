#include "launcher/spawn/pipe.h"

#include <fcntl.h>
#include <poll.h>

#include <cerrno>

#include "base/errors.h"

namespace kolo::launcher {

Pipe Pipe::create(const char* what) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SystemError("pipe2", errno, what);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

bool write_fully(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      // Someone handed us a non-blocking stdout: wait until it drains rather than drop output.
      pollfd ready{fd, POLLOUT, 0};
      ::poll(&ready, 1, 100);
      continue;
    }
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace kolo::launcher
