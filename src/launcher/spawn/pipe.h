// A pipe made of two owned descriptors (base/unique_fd.h), and writing a whole buffer to one. The
// launcher juggles many descriptors: two pipes per rank, log files, the signal fd.
#pragma once

#include <cstddef>

#include "base/unique_fd.h"

namespace kolo::launcher {

using kolo::UniqueFd;

struct Pipe {
  UniqueFd read;
  UniqueFd write;
  // Both ends close-on-exec, so a rank never inherits another rank's pipes; `what` names the pipe
  // in the SystemError if the system runs out of descriptors.
  static Pipe create(const char* what);
};

// Writes the whole buffer, retrying partial writes and EINTR. Returns false when the descriptor
// refuses (EPIPE: nobody reads kolorun's output any more); the caller decides whether that matters.
bool write_fully(int fd, const char* data, size_t size);

}  // namespace kolo::launcher
