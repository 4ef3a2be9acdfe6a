// horovodrun's tuning and library flags: command-line spellings of runtime settings that the
// launcher only passes on, as environment variables, to every rank. Every such flag of horovodrun
// has a row, so a working horovodrun line never fails on one; a flag whose mechanism kolo lacks
// (NCCL streams, torus allreduce, Bayesian autotuning) is accepted with a warning line. One table
// row per flag; a later issue adds a flag by adding a row (and, if its value needs a new
// conversion, a ValueKind).
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
    switch_off,            // the "--no-..." spelling of a switch: exports "0"
  };
  // What the setting does on kolo.
  enum class Effect {
    drives_kolo,        // exported as KOLO_<kolo setting> and HOROVOD_<setting>
    kolos_way_already,  // kolo always behaves so: HOROVOD_<setting> only, nothing to say
    not_in_kolo,        // kolo has no such mechanism: HOROVOD_<setting> only, `instead` is printed
  };
  std::string_view flag;     // "--fusion-threshold-mb"
  std::string_view setting;  // "FUSION_THRESHOLD": exported as KOLO_<setting> and HOROVOD_<setting>
  ValueKind kind;
  std::string_view help;
  Effect effect = Effect::drives_kolo;
  // For not_in_kolo: one line saying what kolo does instead (kolorun prints it as a warning).
  std::string_view instead = {};
  // kolo's own name when it differs from Horovod's (--gloo-timeout-seconds: PEER_TIMEOUT).
  std::string_view kolo_setting = {};
};

std::span<const TuningFlag> tuning_flags();
// The row for `flag` ("--autotune"), or nullptr.
const TuningFlag* find_tuning_flag(std::string_view flag);

// The environment variables a flag's value becomes (horovodrun's HOROVOD_* variable always, so
// scripts that read it see what horovodrun would have set; KOLO_* where kolo acts on it). Throws
// InvalidArgument naming the flag when the text is not a valid value of its kind.
std::vector<std::pair<std::string, std::string>> tuning_flag_environment(const TuningFlag& flag,
                                                                         const std::string& text);

}  // namespace kolo::launcher
