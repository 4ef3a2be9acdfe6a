// The one environment reader. Every setting kolo reads from the environment is in one table
// (env.cc), read as KOLO_<NAME>, else HOROVOD_<NAME> (so Horovod job scripts keep working), else
// the caller's default; core's config, bootstrap, the launcher and the MPI plugin loader all read
// through here. Unknown KOLO_* variables (likely typos) are the ones that name no row of the table.
// The environment is read through a lookup function so tests, and the launcher building a rank's
// environment, can supply their own.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kolo {

// Reads one variable by its full name; nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
// The process environment (getenv).
EnvLookup process_env_lookup();
// A map of variables (kept by reference: it must outlive the lookup).
EnvLookup lookup_in(const std::map<std::string, std::string>& variables);
// The names of every variable in the process environment.
std::vector<std::string> process_env_names();

struct FoundSetting {
  std::string variable;  // "KOLO_CYCLE_TIME" or "HOROVOD_CYCLE_TIME": for messages and logs
  std::string value;
};
// The setting `name` (without prefix, e.g. "CYCLE_TIME"): KOLO_<name> when set and non-empty,
// else HOROVOD_<name>, else nullopt. Throws Error for a name that is not in the table, so every
// setting read is one that is not warned about as unknown.
std::optional<FoundSetting> find_setting(const EnvLookup& lookup, std::string_view name);

// find_setting() read as a number of seconds (>= 0, finite); throws InvalidArgument naming the
// variable and its text when it is not one.
std::optional<double> find_seconds_setting(const EnvLookup& lookup, std::string_view name);

// Whether `name` (without prefix) is a setting kolo reads.
bool is_setting(std::string_view name);
// The KOLO_* names among `names` that name no setting, to warn about once.
std::vector<std::string> unknown_kolo_variables(const std::vector<std::string>& names);

}  // namespace kolo
