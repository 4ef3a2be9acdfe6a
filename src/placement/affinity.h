// Reading and setting which CPUs this process's threads may use (sched_getaffinity and
// sched_setaffinity on each thread: Linux keeps the mask per thread, and a process's new threads
// and children inherit the mask of the thread that creates them).
#pragma once

#include <sys/types.h>

#include <vector>

namespace kolo::placement {

// The CPUs the calling thread (or the thread or process `tid`, whose main thread's mask is the
// process's) may use, sorted. Throws SystemError if the kernel refuses (no such thread).
std::vector<int> thread_affinity(pid_t tid = 0);

// Restricts the calling thread (and what it creates later) to `cpus`. Throws SystemError naming
// the CPUs when the kernel refuses (a CPU outside the cgroup's cpuset).
void set_thread_affinity(const std::vector<int>& cpus);

// Moves every thread of this process whose mask is one of `from` to `cpus`, and returns how many
// moved. Threads with other masks were placed deliberately (a framework's pinned thread, a
// user's os.sched_setaffinity) and keep theirs. A thread that exits meanwhile is skipped.
int move_threads(const std::vector<std::vector<int>>& from, const std::vector<int>& cpus);

}  // namespace kolo::placement
