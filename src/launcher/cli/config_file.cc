#include "launcher/cli/config_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/errors.h"
#include "launcher/cli/tuning_flags.h"

namespace kolo::launcher {

namespace {

// What a "section.key" of horovodrun's schema becomes.
struct KeyRule {
  std::string_view flag;     // tuning flag it sets; empty: see below
  bool negate = false;       // stall_check.enabled -> --no-stall-check
  bool log_level = false;    // logging.level
  std::string_view setting;  // no flag: a true/false setting exported as KOLO_/HOROVOD_<setting>
};

KeyRule flag_rule(std::string_view flag, bool negate = false) { return {flag, negate, false, {}}; }
KeyRule log_level_rule() { return {{}, false, true, {}}; }
KeyRule setting_rule(std::string_view setting) { return {{}, false, false, setting}; }

const std::map<std::string, KeyRule, std::less<>>& schema() {
  static const std::map<std::string, KeyRule, std::less<>> rules = {
      {"params.fusion_threshold_mb", flag_rule("--fusion-threshold-mb")},
      {"params.cycle_time_ms", flag_rule("--cycle-time-ms")},
      {"params.cache_capacity", flag_rule("--cache-capacity")},
      {"autotune.enabled", flag_rule("--autotune")},
      {"autotune.log_file", flag_rule("--autotune-log-file")},
      {"autotune.warmup_samples", flag_rule("--autotune-warmup-samples")},
      {"autotune.steps_per_sample", flag_rule("--autotune-steps-per-sample")},
      {"timeline.filename", flag_rule("--timeline-filename")},
      {"timeline.mark_cycles", flag_rule("--timeline-mark-cycles")},
      {"stall_check.enabled", flag_rule("--no-stall-check", true)},
      {"stall_check.warning_time_seconds", flag_rule("--stall-check-warning-time-seconds")},
      {"stall_check.shutdown_time_seconds", flag_rule("--stall-check-shutdown-time-seconds")},
      {"logging.level", log_level_rule()},
      {"params.hierarchical_allreduce", setting_rule("HIERARCHICAL_ALLREDUCE")},
      // Keys whose flag kolo accepts without a mechanism: the flag's warning says what kolo does.
      {"params.hierarchical_allgather", flag_rule("--hierarchical-allgather")},
      {"params.torus_allreduce", flag_rule("--torus-allreduce")},
      {"autotune.bayes_opt_max_samples", flag_rule("--autotune-bayes-opt-max-samples")},
      {"autotune.gaussian_process_noise", flag_rule("--autotune-gaussian-process-noise")},
      {"library_options.mpi_threads_disable", flag_rule("--mpi-threads-disable")},
      {"library_options.num_nccl_streams", flag_rule("--num-nccl-streams")},
      {"library_options.thread_affinity", flag_rule("--thread-affinity")},
      {"library_options.gloo_timeout_seconds", flag_rule("--gloo-timeout-seconds")},
      {"logging.with_timestamp", flag_rule("--log-with-timestamp")},
      {"logging.hide_timestamp", flag_rule("--log-hide-timestamp")},  // the older spelling
  };
  return rules;
}

// Keys of horovodrun's schema that do not apply to kolo.
const std::set<std::string, std::less<>>& ignored_keys() {
  static const std::set<std::string, std::less<>> keys = {
      "library_options.ccl_bgt_affinity",  // oneCCL's worker affinity: kolo has no oneCCL
  };
  return keys;
}

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \r");
  return text.substr(first, last - first + 1);
}

// The line without a trailing comment (a '#' outside quotes, preceded by a space or at the start).
std::string_view strip_comment(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ')) {
      return line.substr(0, i);
    }
  }
  return line;
}

class Parser {
 public:
  explicit Parser(const std::string& origin) : origin_(origin) {}

  [[noreturn]] void fail(size_t line, std::string_view what) const {
    throw InvalidArgument(fmt::format("{} line {}: {}", origin_, line, what));
  }

  std::string scalar(size_t line, std::string_view raw) const {
    if (raw.empty()) return {};
    const char first = raw.front();
    if (first == '\'' || first == '"') {
      if (raw.size() < 2 || raw.back() != first) fail(line, "unterminated quoted value");
      return std::string(raw.substr(1, raw.size() - 2));
    }
    if (first == '[' || first == '{' || first == '&' || first == '*' || first == '|' ||
        first == '>') {
      fail(line, fmt::format("'{}': only plain or quoted scalar values are supported", raw));
    }
    return std::string(raw);
  }

  ConfigFileSettings parse(std::string_view text) {
    ConfigFileSettings out;
    std::string section;
    size_t section_indent = 0;
    std::set<std::string> seen;
    size_t number = 0;
    while (!text.empty()) {
      const size_t end = text.find('\n');
      std::string_view line = text.substr(0, end);
      text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
      ++number;
      if (line.find('\t') != std::string_view::npos) fail(number, "tabs are not allowed in YAML");
      line = strip_comment(line);
      if (trim(line).empty() || trim(line) == "---") continue;
      const size_t indent = line.find_first_not_of(' ');
      std::string_view body = trim(line);
      if (body.front() == '-') fail(number, "lists are not part of the configuration schema");
      const size_t colon = body.find(':');
      if (colon == std::string_view::npos || (colon + 1 < body.size() && body[colon + 1] != ' ')) {
        fail(number, fmt::format("expected 'key: value', got '{}'", body));
      }
      const std::string key(trim(body.substr(0, colon)));
      const std::string value = scalar(number, trim(body.substr(colon + 1)));
      if (indent == 0) {
        if (!value.empty()) {
          fail(number, fmt::format("'{}' must be a section (params, autotune, timeline, "
                                   "stall_check, library_options, logging)",
                                   key));
        }
        section = key;
        section_indent = 0;
        if (!seen.insert(section).second) fail(number, fmt::format("section '{}' repeated", key));
        continue;
      }
      if (section.empty()) fail(number, "indented key outside a section");
      if (section_indent == 0) section_indent = indent;
      if (indent != section_indent) fail(number, "inconsistent indentation (nesting too deep?)");
      if (value.empty()) fail(number, fmt::format("'{}' has no value", key));
      std::string full = section;
      full += '.';
      full += key;
      if (!seen.insert(full).second) fail(number, fmt::format("'{}' repeated", full));
      add(number, full, value, out);
    }
    return out;
  }

 private:
  void add(size_t line, const std::string& key, const std::string& value,
           ConfigFileSettings& out) const {
    if (ignored_keys().contains(key)) {
      out.ignored.push_back(key);
      return;
    }
    auto rule = schema().find(key);
    if (rule == schema().end()) fail(line, fmt::format("unknown setting '{}'", key));
    if (rule->second.log_level) {
      out.log_level = value;
      return;
    }
    if (!rule->second.setting.empty()) {
      // Validated as a switch; the flag named in an error is the config key.
      const TuningFlag as_switch{key, rule->second.setting, TuningFlag::ValueKind::switch_on, ""};
      try {
        for (auto& entry : tuning_flag_environment(as_switch, value)) {
          out.environment.push_back(std::move(entry));
        }
      } catch (const InvalidArgument& error) {
        fail(line, error.what());
      }
      return;
    }
    const TuningFlag* flag = find_tuning_flag(rule->second.flag);
    std::string text = value;
    try {
      if (rule->second.negate) {
        // enabled: true means the check runs, i.e. --no-stall-check is off.
        text = tuning_flag_environment(*flag, value).front().second == "1" ? "0" : "1";
      }
      tuning_flag_environment(*flag, text);  // validates now, so the error names the line
    } catch (const InvalidArgument& error) {
      fail(line, fmt::format("{}: {}", key, error.what()));
    }
    out.flags.emplace_back(std::string(rule->second.flag), text);
  }

  const std::string& origin_;
};

}  // namespace

ConfigFileSettings parse_config_text(std::string_view text, const std::string& origin) {
  return Parser(origin).parse(text);
}

ConfigFileSettings read_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw InvalidArgument(
        fmt::format("--config-file {}: cannot read it: {}", path, std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config_text(text.str(), "--config-file " + path);
}

}  // namespace kolo::launcher
