// kolorun --config-file: horovodrun's YAML configuration (sections params, autotune, timeline,
// stall_check, library_options, logging), read into the same tuning flags the command line has,
// so one table converts and validates both and command-line flags simply override the file.
//
// The parser reads the subset of YAML these files use: comments, "section:" lines and indented
// "key: value" scalars (plain, 'single' or "double" quoted). Anything else (lists, flow style,
// deeper nesting, tabs) is refused with the file, line and reason, rather than misread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kolo::launcher {

struct ConfigFileSettings {
  // (command-line flag, value text) in file order, e.g. ("--fusion-threshold-mb", "32").
  std::vector<std::pair<std::string, std::string>> flags;
  std::optional<std::string> log_level;  // logging.level
  // Settings kolorun has no flag for, as environment variables (KOLO_* and HOROVOD_*).
  std::vector<std::pair<std::string, std::string>> environment;
  // "section.key" entries horovodrun knows that kolo has no use for (NCCL, MPI, Bayesian
  // optimisation knobs); kolorun mentions them and goes on.
  std::vector<std::string> ignored;
};

// Throws InvalidArgument naming `origin`, the line and the problem for malformed text, an
// unknown section or key, or a value its flag rejects.
ConfigFileSettings parse_config_text(std::string_view text, const std::string& origin);
// Reads and parses `path`; throws InvalidArgument when it cannot be read.
ConfigFileSettings read_config_file(const std::string& path);

}  // namespace kolo::launcher
