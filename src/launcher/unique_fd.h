// An owned file descriptor (move-only), and a pipe made of two of them. The launcher juggles many
// descriptors (two pipes per rank, log files, the signal fd); owning them as values means an
// exception on any path closes what was opened instead of leaking it into later ranks.
#pragma once

#include <unistd.h>

#include <utility>

namespace kolo::launcher {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  [[nodiscard]] int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

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
