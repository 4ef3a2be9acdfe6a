#include "launcher/tuning_flags.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "base/errors.h"

namespace kolo::launcher {

namespace {

using Kind = TuningFlag::ValueKind;

// Help texts follow horovodrun's so `kolorun --help` reads like `horovodrun --help`.
constexpr std::array kFlags{
    TuningFlag{"--fusion-threshold-mb", "FUSION_THRESHOLD", Kind::megabytes_to_bytes,
               "Fusion buffer threshold in MB. This is the maximum amount of tensor data that can "
               "be fused together into a single batch during allreduce / allgather. Setting 0 "
               "disables tensor fusion. (default: 128)"},
    TuningFlag{"--cycle-time-ms", "CYCLE_TIME", Kind::non_negative_number,
               "Cycle time in ms. This is the delay between each tensor fusion cycle. The larger "
               "the cycle time, the more batching, but the greater latency between each allreduce "
               "/ allgather operations. (default: 1)"},
    TuningFlag{"--cache-capacity", "CACHE_CAPACITY", Kind::non_negative_integer,
               "Maximum number of tensor names that will be cached to reduce amount of "
               "coordination required between workers before performing allreduce / allgather. "
               "(default: 1024)"},
};

InvalidArgument bad_value(const TuningFlag& flag, const std::string& text, const char* expected) {
  return InvalidArgument(
      fmt::format("{} {}: expected {}", flag.flag, text.empty() ? "''" : text, expected));
}

uint64_t parse_integer(const TuningFlag& flag, const std::string& text) {
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw bad_value(flag, text, "a non-negative integer");
  }
  return value;
}

double parse_number(const TuningFlag& flag, const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || value < 0) {
    throw bad_value(flag, text, "a non-negative number");
  }
  return value;
}

}  // namespace

std::span<const TuningFlag> tuning_flags() { return kFlags; }

std::vector<std::pair<std::string, std::string>> tuning_flag_environment(const TuningFlag& flag,
                                                                         const std::string& text) {
  std::string value;
  switch (flag.kind) {
    case Kind::non_negative_integer:
      value = std::to_string(parse_integer(flag, text));
      break;
    case Kind::non_negative_number:
      value = fmt::format("{}", parse_number(flag, text));
      break;
    case Kind::megabytes_to_bytes: {
      uint64_t megabytes = parse_integer(flag, text);
      if (megabytes > (UINT64_MAX >> 20)) throw bad_value(flag, text, "a smaller number of MB");
      value = std::to_string(megabytes << 20);
      break;
    }
  }
  // Both names: HOROVOD_* for compatibility, KOLO_* so the flag also beats a KOLO_* variable the
  // user happens to have exported (kolo reads KOLO_* first).
  const std::string setting(flag.setting);
  return {{"KOLO_" + setting, value}, {"HOROVOD_" + setting, value}};
}

}  // namespace kolo::launcher
