#include "launcher/spawn/rank_environment.h"

#include <fmt/format.h>
#include <unistd.h>

#include <string_view>

extern char** environ;

namespace kolo::launcher {

Environment current_environment() {
  Environment environment;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    size_t equals = text.find('=');
    if (equals == std::string_view::npos || equals == 0) continue;
    // First definition wins, as getenv would see it.
    environment.emplace(std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)));
  }
  return environment;
}

std::string format_seconds(double seconds) { return fmt::format("{}", seconds); }

Environment build_rank_environment(const Environment& inherited, const JobSettings& job,
                                   const SlotAssignment& slot) {
  Environment env = inherited;
  // The same setting under both prefixes: kolo reads KOLO_* first, Horovod-era code HOROVOD_*.
  auto set_both = [&env](const std::string& name, const std::string& value) {
    env["KOLO_" + name] = value;
    env["HOROVOD_" + name] = value;
  };

  env["KOLO_RANK"] = std::to_string(slot.rank);
  env["KOLO_SIZE"] = std::to_string(slot.size);
  env["KOLO_HOSTNAME"] = slot.host;
  env["KOLO_RENDEZVOUS_ADDR"] = job.rendezvous_addr;
  env["KOLO_RENDEZVOUS_PORT"] = std::to_string(job.rendezvous_port);
  env["KOLO_SECRET"] = job.secret_hex;
  env["KOLO_START_TIMEOUT"] = format_seconds(job.start_timeout_seconds);
  // A local rank arms a parent-death signal with it (core/launcher_watch.h): no orphan ranks
  // when kolorun itself is killed.
  env["KOLO_LAUNCHER_PID"] = std::to_string(::getpid());

  env["HOROVOD_RANK"] = std::to_string(slot.rank);
  env["HOROVOD_SIZE"] = std::to_string(slot.size);
  env["HOROVOD_HOSTNAME"] = slot.host;
  set_both("LOCAL_RANK", std::to_string(slot.local_rank));
  set_both("LOCAL_SIZE", std::to_string(slot.local_size));
  set_both("CROSS_RANK", std::to_string(slot.cross_rank));
  set_both("CROSS_SIZE", std::to_string(slot.cross_size));
  // horovodrun's gloo mode says so explicitly; a script or library checking them sees gloo.
  env["HOROVOD_CONTROLLER"] = "gloo";
  env["HOROVOD_CPU_OPERATIONS"] = "gloo";

  if (job.log_level) set_both("LOG_LEVEL", *job.log_level);
  for (const auto& [name, value] : job.extra) env[name] = value;
  // Ranks write into pipes, where Python would otherwise block-buffer and hold lines back.
  env.emplace("PYTHONUNBUFFERED", "1");
  return env;
}

std::vector<std::string> to_envp_strings(const Environment& environment) {
  std::vector<std::string> strings;
  strings.reserve(environment.size());
  for (const auto& [name, value] : environment) strings.push_back(name + "=" + value);
  return strings;
}

}  // namespace kolo::launcher
