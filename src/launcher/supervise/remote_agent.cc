#include "launcher/supervise/remote_agent.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/errors.h"
#include "launcher/hosts/local_host.h"
#include "launcher/spawn/agent_protocol.h"
#include "launcher/spawn/exit_status.h"
#include "launcher/spawn/group_signal.h"
#include "launcher/spawn/process_spawn.h"
#include "launcher/supervise/signals.h"
#include "launcher/supervise/stopped_rank_watch.h"

namespace kolo::launcher {

namespace {

// After the launcher is gone: SIGTERM, then this long before SIGKILL.
constexpr auto kKillGrace = std::chrono::seconds(3);
// After the rank exited: how long its left-behind children may keep running (and printing)
// before the agent kills its process group, as the launcher does for local ranks.
constexpr auto kLeftoverGrace = std::chrono::seconds(2);

struct AgentArgs {
  std::string cwd;
  std::vector<std::string> command;
};

AgentArgs parse_agent_args(const std::vector<std::string>& args) {
  AgentArgs parsed;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    if (args[i] == "--cwd" && i + 1 < args.size()) {
      parsed.cwd = args[++i];
    } else {
      throw InvalidArgument(fmt::format("unexpected agent argument '{}'", args[i]));
    }
  }
  if (i < args.size())
    parsed.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  if (parsed.command.empty()) throw InvalidArgument("no command for the agent to run");
  return parsed;
}

void say(const std::string& text) {
  const std::string line = fmt::format("kolorun agent on {}: {}\n", machine_hostname(), text);
  (void)write_fully(2, line.data(), line.size());
}

int finish(const ExitStatus& status) {
  const std::string line = agent_status_line(status);
  (void)write_fully(2, line.data(), line.size());
  return status.shell_code();
}

// Waits (briefly) for the rank's left-behind children, then kills them.
void clean_up_group(pid_t group) {
  const auto deadline = std::chrono::steady_clock::now() + kLeftoverGrace;
  while (::kill(-group, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-group, SIGKILL);
}

// Once kolorun said the other ranks have ended: kills the rank if it stays stopped too long
// (kolorun cannot read this host's /proc; see launcher/stopped_rank_watch.h).
void end_if_stopped_too_long(pid_t pid, std::optional<StoppedRankWatch>& watch) {
  const auto now = Clock::now();
  if (!watch || !watch->time_to_look(now)) return;
  if (!watch->overdue(0, stopped_process_groups().count(pid) != 0, now)) return;
  say(fmt::format(
      "the rank has been stopped (SIGSTOP) for more than {} s while other ranks had ended, and "
      "cannot finish; killing it",
      std::chrono::duration_cast<std::chrono::milliseconds>(watch->allowance()).count() / 1000.0));
  ::kill(-pid, SIGKILL);
}

// Supervises the started rank until it ends; returns how it ended.
ExitStatus supervise(pid_t pid, AgentInput& input, SignalWatcher& signals) {
  bool launcher_gone = false;
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  std::optional<StoppedRankWatch> stopped_watch;
  while (true) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return ExitStatus::from_wait_status(status);
    end_if_stopped_too_long(pid, stopped_watch);
    if (kill_at && std::chrono::steady_clock::now() >= *kill_at) {
      ::kill(-pid, SIGKILL);
      kill_at.reset();
    }
    pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {0, POLLIN, 0}};
    ::poll(fds, launcher_gone ? 1 : 2, 200);
    for (int signal : signals.read_pending()) {
      if (signal != SIGCHLD) signal_group(pid, signal);
    }
    if (launcher_gone || fds[1].revents == 0) continue;
    bool closed = false;
    for (int signal : input.read_signal_requests(closed)) signal_group(pid, signal);
    if (!stopped_watch && input.stopped_watch()) stopped_watch.emplace(*input.stopped_watch());
    if (closed) {
      // The launcher (or the ssh session) is gone: nobody is left to supervise this rank.
      launcher_gone = true;
      signal_group(pid, SIGTERM);  // continued too, should it be stopped
      kill_at = std::chrono::steady_clock::now() + kKillGrace;
    }
  }
}

}  // namespace

int run_remote_agent(const std::vector<std::string>& args) {
  AgentArgs parsed;
  Environment env;
  try {
    parsed = parse_agent_args(args);
  } catch (const Error& error) {
    say(error.what());
    return finish(ExitStatus::exited_with(2));
  }
  // SIGHUP too: sshd sends it when a session with a terminal ends.
  SignalWatcher signals({SIGHUP});
  AgentInput input(0);
  try {
    env = input.read_environment();
  } catch (const Error& error) {
    say(error.what());
    return finish(ExitStatus::exited_with(1));
  }
  // The host's login environment, with what the launcher forwarded on top.
  Environment rank_env = current_environment();
  for (auto& [name, value] : env) rank_env[name] = value;
  // posix_spawnp searches the agent's own PATH: make it the rank's.
  if (auto path = rank_env.find("PATH"); path != rank_env.end()) {
    ::setenv("PATH", path->second.c_str(), 1);
  }
  if (!parsed.cwd.empty() && ::chdir(parsed.cwd.c_str()) != 0) {
    say(fmt::format("cannot enter the working directory {}: {}", parsed.cwd, std::strerror(errno)));
    return finish(ExitStatus::exited_with(1));
  }
  SpawnedProcess rank;
  try {
    rank = start_process(ProcessSpec{parsed.command, rank_env, "the rank", -1, false});
  } catch (const SystemError& error) {
    say(error.what());
    return finish(ExitStatus::exited_with(error.error_code() == ENOENT ? 127 : 126));
  }
  const ExitStatus status = supervise(rank.pid, input, signals);
  clean_up_group(rank.pid);
  return finish(status);
}

}  // namespace kolo::launcher
