// Helpers shared by the transport and rendezvous tests: a Logger that writes to a temp file the
// test can read back, and bounded waits.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "base/logger.h"

namespace kolo::testing {

class LogCapture {
 public:
  LogCapture() : fd_(make_temp(path_)), logger_(LogLevel::warning, "[test]", fd_) {}
  ~LogCapture() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  [[nodiscard]] const Logger& logger() const { return logger_; }

  [[nodiscard]] std::string text() const {
    std::string text;
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return text;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) {
      text.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return text;
  }

  // Waits (bounded) until the log contains `needle`: other threads log asynchronously.
  [[nodiscard]] bool wait_for(const std::string& needle,
                              std::chrono::milliseconds limit = std::chrono::seconds(5)) const {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      if (text().find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return text().find(needle) != std::string::npos;
  }

 private:
  static int make_temp(std::string& path) {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir != nullptr ? dir : "/tmp") + "/kolo-test-log-XXXXXX";
    return ::mkstemp(path.data());
  }

  std::string path_;
  int fd_;
  Logger logger_;
};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kolo::testing
