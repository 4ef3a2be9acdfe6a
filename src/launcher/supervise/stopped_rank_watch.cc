#include "launcher/supervise/stopped_rank_watch.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "base/env.h"

namespace kolo::launcher {

bool StoppedRankWatch::overdue(int rank, bool stopped_now, Clock::time_point now) {
  if (!stopped_now) {
    stopped_since_.erase(rank);  // continued in between: it may finish after all
    return false;
  }
  const auto since = stopped_since_.try_emplace(rank, now).first->second;
  if (now - since <= allowance_ || reported_.count(rank) != 0) return false;
  reported_.insert(rank);
  return true;
}

double rank_peer_timeout_seconds(const Environment& rank_env) {
  const auto found = find_setting(lookup_in(rank_env), "PEER_TIMEOUT");
  if (!found) return 30.0;
  char* end = nullptr;
  const double value = std::strtod(found->value.c_str(), &end);
  return *end == '\0' && value > 0 ? value : 30.0;
}

Duration stopped_rank_allowance(const Environment& rank_env, double grace_seconds) {
  return std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(rank_peer_timeout_seconds(rank_env) + grace_seconds));
}

bool StoppedRankWatch::time_to_look(Clock::time_point now) {
  if (last_look_ && now - *last_look_ < std::chrono::seconds(1)) return false;
  last_look_ = now;
  return true;
}

std::set<pid_t> stopped_process_groups() {
  std::set<pid_t> groups;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return groups;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    std::ifstream stat(std::string("/proc/") + entry->d_name + "/stat");
    std::string text;
    if (!std::getline(stat, text)) continue;  // gone in between
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so parse after the
    // last ')'.
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 1));
    char state = 0;
    long parent = 0;
    long group = 0;
    if (!(fields >> state >> parent >> group)) continue;
    if (state == 'T') groups.insert(static_cast<pid_t>(group));
  }
  ::closedir(proc);
  return groups;
}

}  // namespace kolo::launcher
