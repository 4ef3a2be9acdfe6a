#include "base/logger.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <string>

#include "base/errors.h"

namespace kolo {
namespace {

std::string read_pipe(int fd) {
  std::string text(4096, '\0');
  ssize_t n = ::read(fd, text.data(), text.size());
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

TEST(Logger, LinesCarryPrefixAndLevelAndRespectTheThreshold) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Logger logger(LogLevel::info, "[kolo rank 1/4]", fds[1]);
  logger.debug("hidden {}", 1);
  logger.warn("peer {} is slow", 3);
  ::close(fds[1]);
  EXPECT_EQ(read_pipe(fds[0]), "[kolo rank 1/4] WARNING: peer 3 is slow\n");
  ::close(fds[0]);
}

TEST(Logger, ParsesLevelsAndRejectsOthers) {
  EXPECT_EQ(parse_log_level("DEBUG"), LogLevel::debug);
  EXPECT_EQ(parse_log_level("warn"), LogLevel::warning);
  EXPECT_EQ(parse_log_level("Trace"), LogLevel::trace);
  EXPECT_THROW((void)parse_log_level("loud"), InvalidArgument);
}

}  // namespace
}  // namespace kolo

namespace kolo {
namespace {

TEST(Logger, TimestampsGoAfterThePrefixWhenAskedFor) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Logger logger(LogLevel::info, "[kolo rank 0/2]", fds[1]);
  logger.set_timestamps(true);
  logger.warn("stalled");
  logger.set_timestamps(false);
  logger.warn("plain");
  ::close(fds[1]);
  const std::string text = read_pipe(fds[0]);
  ::close(fds[0]);
  // "[kolo rank 0/2] 2026-11-24 10:38:01.123456 WARNING: stalled"
  EXPECT_TRUE(std::regex_search(
      text, std::regex(R"(^\[kolo rank 0/2\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} WARNING: )"
                       R"(stalled\n\[kolo rank 0/2\] WARNING: plain\n$)")))
      << text;
}

}  // namespace
}  // namespace kolo
