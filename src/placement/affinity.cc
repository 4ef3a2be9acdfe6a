#include "placement/affinity.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include "base/errors.h"
#include "placement/cpu_list.h"

namespace kolo::placement {

namespace {

std::vector<int> mask_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(tid, sizeof(set), &set) != 0) {
    throw SystemError("sched_getaffinity", errno, fmt::format("thread {}", tid));
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// 0 on success, else errno.
int set_mask_of(pid_t tid, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  return ::sched_setaffinity(tid, sizeof(set), &set) == 0 ? 0 : errno;
}

}  // namespace

std::vector<int> thread_affinity(pid_t tid) { return mask_of(tid); }

void set_thread_affinity(const std::vector<int>& cpus) {
  if (int error = set_mask_of(0, cpus); error != 0) {
    throw SystemError("sched_setaffinity", error,
                      fmt::format("restricting a thread to CPUs {}", format_cpu_list(cpus)));
  }
}

int move_threads(const std::vector<std::vector<int>>& from, const std::vector<int>& cpus) {
  std::unique_ptr<DIR, int (*)(DIR*)> tasks(::opendir("/proc/self/task"), ::closedir);
  if (!tasks) throw SystemError("opendir", errno, "/proc/self/task");
  int moved = 0;
  while (const dirent* entry = ::readdir(tasks.get())) {
    if (entry->d_name[0] == '.') continue;
    const auto tid = static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10));
    std::vector<int> mask;
    try {
      mask = mask_of(tid);
    } catch (const SystemError&) {
      continue;  // exited since the listing
    }
    if (std::find(from.begin(), from.end(), mask) == from.end()) continue;
    if (int error = set_mask_of(tid, cpus); error == ESRCH) {
      continue;
    } else if (error != 0) {
      throw SystemError(
          "sched_setaffinity", error,
          fmt::format("restricting thread {} to CPUs {}", tid, format_cpu_list(cpus)));
    }
    ++moved;
  }
  return moved;
}

}  // namespace kolo::placement
