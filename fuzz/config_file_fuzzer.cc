// kolorun --config-file text (launcher/config_file.h), horovodrun's YAML subset. Whatever parses
// must name only known tuning flags, each with a value its flag accepts.
#include "fuzz/fuzz_support.h"
#include "launcher/cli/config_file.h"
#include "launcher/cli/tuning_flags.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kolo;
  const std::string_view text = fuzz::as_text(data, size);
  auto settings = fuzz::decode_or_refuse(
      [&] { return launcher::parse_config_text(text, "--config-file fuzz.yaml"); });
  if (!settings) return 0;
  for (const auto& entry : settings->flags) {
    const std::string& flag = entry.first;
    const std::string& value = entry.second;
    const launcher::TuningFlag* known = launcher::find_tuning_flag(flag);
    fuzz::require(known != nullptr, "only known flags");
    fuzz::require(fuzz::decode_or_refuse([&] {
                    return launcher::tuning_flag_environment(*known, value);
                  }).has_value(),
                  "the value passed its flag's check");
  }
  return 0;
}
