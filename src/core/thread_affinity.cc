#include "core/thread_affinity.h"

#include <fmt/ranges.h>
#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/errors.h"

namespace kolo::core {

std::vector<int> parse_core_list(const std::string& text, const std::string& variable) {
  std::vector<int> cores;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    int core = -1;
    auto [last, error] = std::from_chars(item.data(), item.data() + item.size(), core);
    if (item.empty() || error != std::errc() || last != item.data() + item.size() || core < 0) {
      throw InvalidArgument(fmt::format(
          "{}='{}': '{}' is not a core number (expected a comma-separated list of core numbers, "
          "one per local rank, e.g. 0,1)",
          variable, text, item));
    }
    cores.push_back(core);
    start = end + 1;
  }
  return cores;
}

std::optional<int> core_for_local_rank(const std::vector<int>& cores, int local_rank,
                                       int local_size, const Logger& logger) {
  if (cores.empty()) return std::nullopt;
  if (static_cast<int>(cores.size()) < local_size) {
    logger.warn(
        "THREAD_AFFINITY lists {} core(s) ({}) but this host runs {} local ranks: one core "
        "per local rank is needed; the background thread is not pinned",
        cores.size(), fmt::join(cores, ","), local_size);
    return std::nullopt;
  }
  return cores[static_cast<size_t>(local_rank)];
}

bool pin_thread(pthread_t thread, int core, const Logger& logger) {
  if (core >= CPU_SETSIZE) {
    logger.warn(
        "THREAD_AFFINITY: core {} is beyond what this system can address ({}); the "
        "background thread is not pinned",
        core, CPU_SETSIZE);
    return false;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  if (int error = pthread_setaffinity_np(thread, sizeof(set), &set); error != 0) {
    logger.warn(
        "THREAD_AFFINITY: cannot pin the background thread to core {}: {} (is the core "
        "on this machine and in this process's cpuset?); it is not pinned",
        core, std::strerror(error));
    return false;
  }
  logger.debug("background thread pinned to core {}", core);
  return true;
}

}  // namespace kolo::core
