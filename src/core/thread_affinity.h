// Pinning the background thread to a core, as HOROVOD_THREAD_AFFINITY does: the variable lists one
// core per local rank ("0,2" with two ranks on a host), local rank i taking the i-th, so the
// thread that drives communication does not migrate between cores (or compete with the training
// threads on the cores they were given).
#pragma once

#include <pthread.h>

#include <optional>
#include <string>
#include <vector>

#include "base/logger.h"

namespace kolo::core {

// "0,2,4" -> {0, 2, 4}. Throws InvalidArgument naming `variable` for anything that is not a
// comma-separated list of non-negative integers.
std::vector<int> parse_core_list(const std::string& text, const std::string& variable);

// The core of `local_rank`, or nullopt (with a warning saying why) when the list has fewer cores
// than the host has local ranks (Horovod then pins nothing too). nullopt when `cores` is empty.
std::optional<int> core_for_local_rank(const std::vector<int>& cores, int local_rank,
                                       int local_size, const Logger& logger);

// Pins `thread` to `core`; returns false, after a warning naming the core and the system's
// reason, when the OS refuses (a core this machine or cgroup does not have).
bool pin_thread(pthread_t thread, int core, const Logger& logger);

}  // namespace kolo::core
