#include "base/logger.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <ctime>

#include "base/errors.h"

namespace kolo {

LogLevel parse_log_level(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "trace") return LogLevel::trace;
  if (lower == "debug") return LogLevel::debug;
  if (lower == "info") return LogLevel::info;
  if (lower == "warning" || lower == "warn") return LogLevel::warning;
  if (lower == "error") return LogLevel::error;
  if (lower == "fatal") return LogLevel::fatal;
  if (lower == "off" || lower == "none") return LogLevel::off;
  throw InvalidArgument("unknown log level '" + std::string(text) +
                        "' (expected trace, debug, info, warning, error, fatal or off)");
}

std::string_view log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::trace:
      return "TRACE";
    case LogLevel::debug:
      return "DEBUG";
    case LogLevel::info:
      return "INFO";
    case LogLevel::warning:
      return "WARNING";
    case LogLevel::error:
      return "ERROR";
    case LogLevel::fatal:
      return "FATAL";
    case LogLevel::off:
      return "OFF";
  }
  return "?";
}

namespace {

std::string now_text() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm local{};
  localtime_r(&seconds, &local);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &local);
  return fmt::format("{}.{:06d}", date, micros);
}

}  // namespace

void Logger::write(LogLevel level, std::string_view message) const {
  std::string line =
      timestamps_
          ? fmt::format("{} {} {}: {}\n", prefix_, now_text(), log_level_name(level), message)
          : fmt::format("{} {}: {}\n", prefix_, log_level_name(level), message);
  // One write per line keeps concurrent lines whole; retry on partial writes and EINTR.
  const char* data = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to report a failure to log
    data += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace kolo
