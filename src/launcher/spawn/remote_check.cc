#include "launcher/spawn/remote_check.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>

#include "base/clock.h"
#include "base/errors.h"
#include "launcher/spawn/exit_status.h"
#include "launcher/spawn/process_spawn.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

namespace {

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

struct Probe {
  std::string host;
  SpawnedProcess process;
  std::string out;
  std::string err;
  std::optional<int> exit_code;  // ssh's, once reaped
};

// Reads what a pipe has; closes it at end-of-file.
void read_some(UniqueFd& fd, std::string& into) {
  char buffer[4096];
  while (fd.valid()) {
    ssize_t n = ::read(fd.fd(), buffer, sizeof(buffer));
    if (n > 0) {
      if (into.size() < 65536) into.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    fd.reset();
  }
}

void make_nonblocking(const UniqueFd& fd) {
  int flags = ::fcntl(fd.fd(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.fd(), F_SETFL, flags | O_NONBLOCK);
}

}  // namespace

std::string judge_version_answer(const std::string& host, int exit_code, const std::string& out,
                                 const std::string& err, const RemoteCheckSettings& settings) {
  const std::string said = trim(err).empty() ? "" : fmt::format(": {}", trim(err));
  if (exit_code == 255) return fmt::format("host '{}' is not reachable over ssh{}", host, said);
  if (exit_code == 127) {
    return fmt::format(
        "host '{}' has no kolorun at {} (install kolo at the same path on every "
        "host){}",
        host, settings.kolorun, said);
  }
  if (exit_code != 0) {
    return fmt::format("host '{}': '{} --version' failed with exit code {}{}", host,
                       settings.kolorun, exit_code, said);
  }
  const std::string version = trim(out);
  if (version != settings.expected_version) {
    return fmt::format(
        "host '{}' runs '{}' but this launcher is '{}': install the same kolo "
        "version on every host",
        host, version, settings.expected_version);
  }
  return {};
}

void check_remote_hosts(const std::vector<std::string>& hosts, const RemoteCheckSettings& settings,
                        const Logger& logger) {
  if (hosts.empty()) return;
  std::vector<Probe> probes;
  std::vector<std::string> problems;
  SshOptions ssh = settings.ssh;
  // ssh must give up connecting before our own deadline, so its own message is what we report.
  ssh.connect_timeout_seconds = std::max(1, static_cast<int>(settings.timeout_seconds));
  for (const auto& host : hosts) {
    try {
      Probe probe{host,
                  start_process(ProcessSpec{
                      ssh_argv(ssh, host, remote_version_command(settings.kolorun)),
                      current_environment(), "the ssh check of host " + host, -1, true}),
                  {},
                  {},
                  std::nullopt};
      make_nonblocking(probe.process.stdout_read);
      make_nonblocking(probe.process.stderr_read);
      probes.push_back(std::move(probe));
    } catch (const Error& error) {
      problems.push_back(fmt::format("cannot run ssh for host '{}': {}", host, error.what()));
    }
  }
  const Deadline deadline(std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(settings.timeout_seconds)));
  while (true) {
    bool pending = false;
    std::vector<pollfd> fds;
    for (auto& probe : probes) {
      if (!probe.exit_code) {
        int status = 0;
        if (::waitpid(probe.process.pid, &status, WNOHANG) == probe.process.pid) {
          probe.exit_code = ExitStatus::from_wait_status(status).shell_code();
        }
      }
      for (UniqueFd* fd : {&probe.process.stdout_read, &probe.process.stderr_read}) {
        if (fd->valid()) fds.push_back(pollfd{fd->fd(), POLLIN, 0});
      }
      pending = pending || !probe.exit_code || probe.process.stdout_read.valid() ||
                probe.process.stderr_read.valid();
    }
    if (!pending || deadline.expired()) break;
    ::poll(fds.data(), fds.size(), deadline.remaining_ms(100));
    for (auto& probe : probes) {
      read_some(probe.process.stdout_read, probe.out);
      read_some(probe.process.stderr_read, probe.err);
    }
  }
  for (auto& probe : probes) {
    if (!probe.exit_code) {
      ::kill(-probe.process.pid, SIGKILL);
      ::waitpid(probe.process.pid, nullptr, 0);
      problems.push_back(
          fmt::format("host '{}' did not answer over ssh within {} s (--start-timeout)", probe.host,
                      format_seconds(settings.timeout_seconds)));
      continue;
    }
    std::string problem =
        judge_version_answer(probe.host, *probe.exit_code, probe.out, probe.err, settings);
    if (problem.empty()) {
      logger.info("host {}: reachable over ssh, {}", probe.host, settings.expected_version);
    } else {
      problems.push_back(std::move(problem));
    }
  }
  if (!problems.empty()) {
    throw InvalidArgument(
        fmt::format("cannot launch on every host:\n  {}", fmt::join(problems, "\n  ")));
  }
}

}  // namespace kolo::launcher
