#include "base/env.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>

#include "base/errors.h"

extern char** environ;

namespace kolo {

namespace {

// Every setting, by its name without prefix: the rows of base/settings.def, which the user
// guide's configuration page is generated from too.
constexpr std::string_view kSettings[] = {
#define KOLO_SETTING(name, group, default_text, meaning) #name,
#include "base/settings.def"
#undef KOLO_SETTING
};

}  // namespace

EnvLookup process_env_lookup() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (const char* value = std::getenv(name.c_str()); value != nullptr) return std::string(value);
    return std::nullopt;
  };
}

EnvLookup lookup_in(const std::map<std::string, std::string>& variables) {
  return [&variables](const std::string& name) -> std::optional<std::string> {
    auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

std::vector<std::string> process_env_names() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    names.emplace_back(text.substr(0, text.find('=')));
  }
  return names;
}

bool is_setting(std::string_view name) {
  return std::find(std::begin(kSettings), std::end(kSettings), name) != std::end(kSettings);
}

std::optional<FoundSetting> find_setting(const EnvLookup& lookup, std::string_view name) {
  if (!is_setting(name)) {
    throw Error("internal error: setting '" + std::string(name) +
                "' is read but missing from the table in base/env.cc");
  }
  for (const char* prefix : {"KOLO_", "HOROVOD_"}) {
    std::string variable = prefix + std::string(name);
    if (auto value = lookup(variable); value && !value->empty()) {
      return FoundSetting{std::move(variable), std::move(*value)};
    }
  }
  return std::nullopt;
}

std::optional<double> find_seconds_setting(const EnvLookup& lookup, std::string_view name) {
  auto found = find_setting(lookup, name);
  if (!found) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(found->value.c_str(), &end);
  if (end != found->value.c_str() + found->value.size() || !std::isfinite(value) || value < 0) {
    throw InvalidArgument(found->variable + "='" + found->value + "' is not a number of seconds");
  }
  return value;
}

std::vector<std::string> unknown_kolo_variables(const std::vector<std::string>& names) {
  std::vector<std::string> unknown;
  for (const auto& name : names) {
    if (name.rfind("KOLO_", 0) == 0 && !is_setting(std::string_view(name).substr(5))) {
      unknown.push_back(name);
    }
  }
  return unknown;
}

}  // namespace kolo
