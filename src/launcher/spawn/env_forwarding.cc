#include "launcher/spawn/env_forwarding.h"

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "base/errors.h"

namespace kolo::launcher {

namespace {

constexpr std::array<std::string_view, 4> kAlwaysForwarded{"PATH", "PYTHONPATH", "LD_LIBRARY_PATH",
                                                           "PYTHONUNBUFFERED"};
constexpr std::array<std::string_view, 2> kForwardedPrefixes{"KOLO_", "HOROVOD_"};

std::string name_of(const std::string& option) { return option.substr(0, option.find('=')); }

}  // namespace

void apply_env_options(const std::vector<std::string>& env_options, Environment& env) {
  for (const auto& option : env_options) {
    const size_t equals = option.find('=');
    if (equals != std::string::npos) {
      env[option.substr(0, equals)] = option.substr(equals + 1);
    } else if (!env.contains(option)) {
      throw InvalidArgument(fmt::format(
          "-x {0}: {0} is not set in kolorun's environment (use -x {0}=VALUE to set it)", option));
    }
  }
}

Environment remote_rank_environment(const Environment& rank_env,
                                    const std::vector<std::string>& env_options) {
  Environment forwarded;
  for (const auto& [name, value] : rank_env) {
    bool wanted = false;
    for (auto always : kAlwaysForwarded) wanted = wanted || name == always;
    for (auto prefix : kForwardedPrefixes) wanted = wanted || name.starts_with(prefix);
    for (const auto& option : env_options) wanted = wanted || name == name_of(option);
    if (wanted) forwarded[name] = value;
  }
  return forwarded;
}

}  // namespace kolo::launcher
