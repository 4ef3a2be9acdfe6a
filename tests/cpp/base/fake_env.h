// An EnvLookup over a fixed map, so config tests never touch the process environment.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "base/env.h"

namespace kolo {

inline EnvLookup env_of(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace kolo
