#include "launcher/supervise/signals.h"

#include <pthread.h>
#include <sys/signalfd.h>

#include <cerrno>

#include "base/errors.h"

namespace kolo::launcher {

SignalWatcher::SignalWatcher(const std::vector<int>& extra) {
  sigset_t watched;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, SIGINT);
  sigaddset(&watched, SIGTERM);
  for (int signal : extra) sigaddset(&watched, signal);
  if (int error = ::pthread_sigmask(SIG_BLOCK, &watched, &previous_mask_); error != 0) {
    throw SystemError("pthread_sigmask", error, "blocking SIGCHLD/SIGINT/SIGTERM in kolorun");
  }
  int fd = ::signalfd(-1, &watched, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    ::pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
    throw SystemError("signalfd", error, "watching SIGCHLD/SIGINT/SIGTERM in kolorun");
  }
  fd_ = UniqueFd(fd);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, &previous_sigpipe_);
}

SignalWatcher::~SignalWatcher() {
  ::sigaction(SIGPIPE, &previous_sigpipe_, nullptr);
  fd_.reset();
  ::pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
}

std::vector<int> SignalWatcher::read_pending() {
  std::vector<int> signals;
  signalfd_siginfo info{};
  while (true) {
    ssize_t n = ::read(fd_.fd(), &info, sizeof(info));
    if (n == static_cast<ssize_t>(sizeof(info))) {
      signals.push_back(static_cast<int>(info.ssi_signo));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return signals;  // EAGAIN: nothing more pending
  }
}

}  // namespace kolo::launcher
