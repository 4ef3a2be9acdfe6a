// horovodrun's tuning flags: command-line spellings of runtime settings that the launcher only
// passes on, as environment variables, to every rank. One table row per flag; a later issue adds a
// flag by adding a row (and, if its value needs a new conversion, a ValueKind).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kolo::launcher {

struct TuningFlag {
  enum class ValueKind {
    non_negative_integer,  // "1024"
    non_negative_number,   // "2.5"
    megabytes_to_bytes,    // "64" (MB) -> "67108864"
    path,                  // any non-empty text, passed on as is
    switch_on,             // takes no value on the command line ("1"); true/false in a config file
  };
  std::string_view flag;     // "--fusion-threshold-mb"
  std::string_view setting;  // "FUSION_THRESHOLD": exported as KOLO_<setting> and HOROVOD_<setting>
  ValueKind kind;
  std::string_view help;
};

std::span<const TuningFlag> tuning_flags();
// The row for `flag` ("--autotune"), or nullptr.
const TuningFlag* find_tuning_flag(std::string_view flag);

// The environment variables a flag's value becomes. Throws InvalidArgument naming the flag when the
// text is not a valid value of its kind.
std::vector<std::pair<std::string, std::string>> tuning_flag_environment(const TuningFlag& flag,
                                                                         const std::string& text);

}  // namespace kolo::launcher
