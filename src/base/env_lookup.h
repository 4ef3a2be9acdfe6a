// How settings and launch variables are read: through a lookup function rather than getenv, so
// tests can supply their own environment.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace kolo {

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

}  // namespace kolo
