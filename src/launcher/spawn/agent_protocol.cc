#include "launcher/spawn/agent_protocol.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "base/errors.h"

namespace kolo::launcher {

namespace {

constexpr std::string_view kEnvironmentHeader = "kolo-agent-environment 1";
constexpr std::string_view kEnvironmentEnd = "end";
constexpr std::string_view kSignalRequest = "signal ";
constexpr std::string_view kStoppedWatchRequest = "end-if-stopped ";
// Starts with a control character so that no ordinary output line can be taken for it.
constexpr std::string_view kStatusPrefix = "\x1ekolo-agent-status ";

std::string to_hex(std::string_view bytes) {
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) hex += fmt::format("{:02x}", c);
  return hex;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string bytes;
  bytes.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned value = 0;
    auto [end, error] = std::from_chars(hex.data() + i, hex.data() + i + 2, value, 16);
    if (error != std::errc() || end != hex.data() + i + 2) return std::nullopt;
    bytes.push_back(static_cast<char>(value));
  }
  return bytes;
}

std::optional<int> to_int(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::string encode_agent_environment(const Environment& env) {
  std::string block = std::string(kEnvironmentHeader) + "\n";
  for (const auto& [name, value] : env) {
    std::string entry = name;
    entry += '=';
    entry += value;
    block += to_hex(entry);
    block += '\n';
  }
  block += std::string(kEnvironmentEnd) + "\n";
  return block;
}

std::optional<std::string> AgentInput::next_line() {
  while (true) {
    if (size_t newline = buffer_.find('\n'); newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    char chunk[4096];
    ssize_t n = ::read(fd_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

Environment AgentInput::read_environment() {
  auto header = next_line();
  if (!header || *header != kEnvironmentHeader) {
    throw InvalidArgument(
        "the launcher did not send the rank's environment (is this agent run by "
        "a kolorun of the same version?)");
  }
  Environment env;
  while (true) {
    auto line = next_line();
    if (!line) throw InvalidArgument("the launcher's connection ended inside the environment");
    if (*line == kEnvironmentEnd) break;
    auto entry = from_hex(*line);
    const size_t equals = entry ? entry->find('=') : std::string::npos;
    if (!entry || equals == 0 || equals == std::string::npos) {
      throw InvalidArgument(
          fmt::format("malformed environment line '{}' from the launcher", *line));
    }
    env[entry->substr(0, equals)] = entry->substr(equals + 1);
  }
  return env;
}

std::vector<int> AgentInput::read_signal_requests(bool& closed) {
  std::vector<int> signals;
  int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK) == 0) ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
  char chunk[4096];
  while (true) {
    ssize_t n = ::read(fd_, chunk, sizeof(chunk));
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (n < 0 && errno != EAGAIN)) closed = true;
    break;
  }
  for (size_t newline; (newline = buffer_.find('\n')) != std::string::npos;) {
    std::string_view line(buffer_.data(), newline);
    if (line.substr(0, kSignalRequest.size()) == kSignalRequest) {
      if (auto signal = to_int(line.substr(kSignalRequest.size())); signal && *signal > 0) {
        signals.push_back(*signal);
      }
    } else if (line.substr(0, kStoppedWatchRequest.size()) == kStoppedWatchRequest) {
      if (auto ms = to_int(line.substr(kStoppedWatchRequest.size())); ms && *ms > 0) {
        stopped_watch_ = std::chrono::milliseconds(*ms);
      }
    }
    buffer_.erase(0, newline + 1);
  }
  return signals;
}

std::string agent_signal_request(int signal) {
  return fmt::format("{}{}\n", kSignalRequest, signal);
}

std::string agent_stopped_watch_request(Duration allowance) {
  return fmt::format("{}{}\n", kStoppedWatchRequest,
                     std::chrono::duration_cast<std::chrono::milliseconds>(allowance).count());
}

std::string agent_status_line(const ExitStatus& status) {
  return fmt::format("{}{} {}\n", kStatusPrefix,
                     status.kind == ExitStatus::Kind::exited ? "exited" : "signaled", status.value);
}

std::optional<ExitStatus> parse_agent_status_line(std::string_view line) {
  if (line.substr(0, kStatusPrefix.size()) != kStatusPrefix) return std::nullopt;
  line.remove_prefix(kStatusPrefix.size());
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  const size_t space = line.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto value = to_int(line.substr(space + 1));
  if (!value || *value < 0) return std::nullopt;
  if (line.substr(0, space) == "exited") return ExitStatus::exited_with(*value);
  if (line.substr(0, space) == "signaled") return ExitStatus::killed_by(*value);
  return std::nullopt;
}

}  // namespace kolo::launcher
