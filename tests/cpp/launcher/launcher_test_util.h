// Helpers shared by the launcher's unit tests.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "base/errors.h"

namespace kolo::launcher::testing {

// The message of the InvalidArgument that `action` throws, or "no error".
inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "no error";
}

// An environment lookup over fixed values.
inline std::function<std::optional<std::string>(const std::string&)> env_of(
    std::map<std::string, std::string> values) {
  return [values = std::move(values)](const std::string& name) -> std::optional<std::string> {
    auto found = values.find(name);
    if (found == values.end()) return std::nullopt;
    return found->second;
  };
}

}  // namespace kolo::launcher::testing
