#include "launcher/elastic/discovery.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <map>

#include "base/errors.h"
#include "launcher/spawn/exit_status.h"
#include "launcher/spawn/process_spawn.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

namespace {

std::string_view trim(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  const auto end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

// Reads everything from a non-blocking pipe that is there now; false once it is closed.
bool read_some(int fd, std::string& into) {
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      into.append(buffer, static_cast<size_t>(got));
      continue;
    }
    if (got == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

}  // namespace

std::vector<HostSlots> parse_discovery_output(std::string_view text, int default_slots) {
  std::vector<HostSlots> hosts;
  std::map<std::string, size_t> index;
  int line_number = 0;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    const std::string_view line = trim(text.substr(0, newline));
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    ++line_number;
    if (line.empty()) continue;
    const auto colon = line.find(':');
    const std::string_view name = line.substr(0, colon);
    int slots = default_slots;
    if (colon != std::string_view::npos) {
      const std::string_view count = line.substr(colon + 1);
      const auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), slots);
      if (error != std::errc() || end != count.data() + count.size() || slots < 1) {
        throw InvalidArgument(
            fmt::format("host discovery output line {} ('{}'): '{}' is not a positive slot count",
                        line_number, line, count));
      }
    }
    if (!valid_host_name(name)) {
      throw InvalidArgument(fmt::format(
          "host discovery output line {} ('{}'): '{}' is not a host name (expected 'host' or "
          "'host:slots')",
          line_number, line, name));
    }
    const std::string host(name);
    if (auto found = index.find(host); found != index.end()) {
      hosts[found->second].slots = slots;
    } else {
      index.emplace(host, hosts.size());
      hosts.push_back(HostSlots{host, slots});
    }
  }
  return hosts;
}

std::string run_discovery_script(const std::string& script, Duration timeout) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.env = current_environment();
  spec.who = fmt::format("host discovery script '{}'", script);
  SpawnedProcess process = start_process(spec);
  for (const int fd : {process.stdout_read.fd(), process.stderr_read.fd()}) {
    (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  std::string out;
  std::string err;
  bool out_open = true;
  bool err_open = true;
  const Deadline deadline(timeout);
  while ((out_open || err_open) && !deadline.expired()) {
    pollfd fds[2] = {{out_open ? process.stdout_read.fd() : -1, POLLIN, 0},
                     {err_open ? process.stderr_read.fd() : -1, POLLIN, 0}};
    if (::poll(fds, 2, deadline.remaining_ms(200)) < 0 && errno != EINTR) break;
    if (out_open && fds[0].revents != 0) out_open = read_some(process.stdout_read.fd(), out);
    if (err_open && fds[1].revents != 0) err_open = read_some(process.stderr_read.fd(), err);
  }
  if (out_open || err_open) {
    ::kill(-process.pid, SIGKILL);
    (void)::waitpid(process.pid, nullptr, 0);
    throw Error(fmt::format("{} did not finish within {} s; it was killed", spec.who,
                            format_seconds(std::chrono::duration<double>(timeout).count())));
  }
  int status = 0;
  while (::waitpid(process.pid, &status, 0) < 0 && errno == EINTR) {
  }
  const ExitStatus outcome = ExitStatus::from_wait_status(status);
  if (!outcome.success()) {
    // Keep the substring alive: trim() returns a view into its argument.
    const std::string last_line = err.substr(err.rfind('\n', err.size() - 2) + 1);
    const std::string_view last = trim(last_line);
    throw Error(fmt::format("{} {}{}", spec.who, outcome.describe(),
                            last.empty() ? "" : fmt::format(": {}", last)));
  }
  return out;
}

}  // namespace kolo::launcher
