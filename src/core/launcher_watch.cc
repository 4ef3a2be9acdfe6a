#include "core/launcher_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

namespace kolo::core {

namespace {

// The parent of `pid`, from /proc/PID/stat ("pid (comm) state ppid ..."); -1 when unreadable.
pid_t parent_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return -1;
  const auto close = text.rfind(')');  // comm may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 1));
  char state = 0;
  long parent = -1;
  if (!(fields >> state >> parent)) return -1;
  return static_cast<pid_t>(parent);
}

// Blocks until `launcher` has ended: a pidfd becomes readable then; where pidfds are missing
// (Linux < 5.3), probes once a second.
void wait_for_end_of(pid_t launcher) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, launcher, 0));
  if (fd >= 0) {
    pollfd ready{fd, POLLIN, 0};
    while (::poll(&ready, 1, -1) < 0 && errno == EINTR) {
    }
    ::close(fd);
    return;
  }
  if (errno == ESRCH) return;  // already gone
  while (::kill(launcher, 0) == 0 || errno == EPERM) ::sleep(1);
}

// This process is in the process group kolorun made for a rank, below a wrapper (`kolorun sh -c
// 'python train.py; ...'`): kolorun's SIGKILL reaches nobody here, and a parent-death signal
// would follow the shell, not kolorun. A thread waits for kolorun to end, then ends the whole
// group (the shell, this process, its helpers), as kolorun stops a rank's group. One watcher
// per process however often this runs (import, then every init()): the once-flag is process
// state, not job state.
void end_group_with(pid_t launcher) {
  static std::once_flag started;
  std::call_once(started, [launcher] {
    std::thread([launcher] {
      wait_for_end_of(launcher);
      ::kill(0, SIGTERM);  // 0: this process's group
    }).detach();
  });
}

// KOLO_LAUNCHER_PID, when it is a plausible pid.
std::optional<pid_t> launcher_pid(const EnvLookup& lookup) {
  const auto found = find_setting(lookup, "LAUNCHER_PID");
  if (!found) return std::nullopt;
  const std::string* text = &found->value;
  char* end = nullptr;
  const long launcher = std::strtol(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0' || launcher <= 1) return std::nullopt;
  return static_cast<pid_t>(launcher);
}

}  // namespace

std::optional<pid_t> local_launcher(const EnvLookup& lookup) {
  const auto launcher = launcher_pid(lookup);
  if (!launcher) return std::nullopt;
  const pid_t group = ::getpgrp();
  if (::getppid() == *launcher || (group != ::getpid() && parent_of(group) == *launcher)) {
    return launcher;
  }
  return std::nullopt;
}

void end_with_launcher(const EnvLookup& lookup) {
  const auto found_launcher = launcher_pid(lookup);
  if (!found_launcher) return;
  const long launcher = *found_launcher;
  if (::getppid() != static_cast<pid_t>(launcher)) {
    // Not kolorun's child. Below a wrapper in the rank's own process group (its leader is
    // kolorun's child), watch kolorun from here; anything else (mpirun, a remote host, a process
    // that left the group) is not kolorun's to stop.
    const pid_t group = ::getpgrp();
    if (group != ::getpid() && parent_of(group) == static_cast<pid_t>(launcher)) {
      end_group_with(static_cast<pid_t>(launcher));
    }
    return;
  }
  // SIGTERM, not SIGKILL: a script may catch it to save a checkpoint; without a handler it ends.
  (void)::prctl(PR_SET_PDEATHSIG, SIGTERM);
  // kolorun may have died between the two checks: then the signal was never armed in time.
  if (::getppid() != static_cast<pid_t>(launcher)) ::raise(SIGTERM);
}

}  // namespace kolo::core
