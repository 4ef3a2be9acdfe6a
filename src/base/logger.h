// Logging without global state: a Logger is a value owned by whoever runs (the Runtime, the
// launcher) and handed by reference to the parts that need to report. Each line carries a prefix
// such as "[kolo rank 1/4]" and is written with one write(2) so lines from threads never
// interleave.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <string>
#include <string_view>

namespace kolo {

enum class LogLevel { trace = 0, debug, info, warning, error, fatal, off };

// Parses "trace|debug|info|warning|warn|error|fatal|off" (any case); throws InvalidArgument
// otherwise.
LogLevel parse_log_level(std::string_view text);
std::string_view log_level_name(LogLevel level);

class Logger {
 public:
  explicit Logger(LogLevel level = LogLevel::warning, std::string prefix = "[kolo]", int fd = 2)
      : level_(level), prefix_(std::move(prefix)), fd_(fd) {}

  [[nodiscard]] bool enabled(LogLevel level) const { return level >= level_.load(); }
  void set_level(LogLevel level) { level_ = level; }
  // A local date and time with microseconds ("2026-11-24 10:38:01.123456") after the prefix of
  // each line (Horovod's HOROVOD_LOG_HIDE_TIME=0).
  void set_timestamps(bool on) { timestamps_ = on; }
  // Not thread-safe against concurrent logging: set the prefix before starting threads.
  void set_prefix(std::string prefix) { prefix_ = std::move(prefix); }
  [[nodiscard]] const std::string& prefix() const { return prefix_; }

  void write(LogLevel level, std::string_view message) const;

  template <typename... Args>
  void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) const {
    if (enabled(level)) write(level, fmt::format(format, std::forward<Args>(args)...));
  }
  template <typename... Args>
  void debug(fmt::format_string<Args...> format, Args&&... args) const {
    log(LogLevel::debug, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void info(fmt::format_string<Args...> format, Args&&... args) const {
    log(LogLevel::info, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void warn(fmt::format_string<Args...> format, Args&&... args) const {
    log(LogLevel::warning, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void error(fmt::format_string<Args...> format, Args&&... args) const {
    log(LogLevel::error, format, std::forward<Args>(args)...);
  }

 private:
  std::atomic<LogLevel> level_;
  std::atomic<bool> timestamps_{false};
  std::string prefix_;
  int fd_;
};

}  // namespace kolo
