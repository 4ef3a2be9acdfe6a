#include "launcher/cli/config_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/errors.h"
#include "launcher/cli/cli.h"

namespace kolo::launcher {
namespace {

using Flags = std::vector<std::pair<std::string, std::string>>;

// horovodrun's documented example, every section present.
constexpr const char* kHorovodExample = R"(# horovodrun --config-file
params:
  fusion_threshold_mb: 32
  cycle_time_ms: 10
  cache_capacity: 2048
  hierarchical_allreduce: true
  hierarchical_allgather: true

autotune:
  enabled: true
  log_file: 'horovod_autotune_log.txt'
  warmup_samples: 5
  steps_per_sample: 20
  bayes_opt_max_samples: 50
  gaussian_process_noise: 0.9

timeline:
  filename: "horovod timeline.json"   # quoted, with a space
  mark_cycles: true

stall_check:
  enabled: false
  warning_time_seconds: 120
  shutdown_time_seconds: 240

library_options:
  mpi_threads_disable: true
  num_nccl_streams: 2
  ccl_bgt_affinity: 1
  gloo_timeout_seconds: 60

logging:
  level: INFO
  hide_timestamp: true
)";

std::string error_of(std::string_view text) {
  try {
    parse_config_text(text, "cfg.yaml");
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

TEST(ConfigFile, HorovodrunSchemaMapsOntoTheTuningFlags) {
  ConfigFileSettings settings = parse_config_text(kHorovodExample, "cfg.yaml");
  EXPECT_EQ(settings.flags, (Flags{{"--fusion-threshold-mb", "32"},
                                   {"--cycle-time-ms", "10"},
                                   {"--cache-capacity", "2048"},
                                   {"--hierarchical-allgather", "true"},
                                   {"--autotune", "true"},
                                   {"--autotune-log-file", "horovod_autotune_log.txt"},
                                   {"--autotune-warmup-samples", "5"},
                                   {"--autotune-steps-per-sample", "20"},
                                   {"--autotune-bayes-opt-max-samples", "50"},
                                   {"--autotune-gaussian-process-noise", "0.9"},
                                   {"--timeline-filename", "horovod timeline.json"},
                                   {"--timeline-mark-cycles", "true"},
                                   {"--no-stall-check", "1"},
                                   {"--stall-check-warning-time-seconds", "120"},
                                   {"--stall-check-shutdown-time-seconds", "240"},
                                   {"--mpi-threads-disable", "true"},
                                   {"--num-nccl-streams", "2"},
                                   {"--gloo-timeout-seconds", "60"},
                                   {"--log-hide-timestamp", "true"}}));
  EXPECT_EQ(settings.log_level, "INFO");
  EXPECT_EQ(settings.environment,
            (Flags{{"KOLO_HIERARCHICAL_ALLREDUCE", "1"}, {"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"}}));
  EXPECT_EQ(settings.ignored, (std::vector<std::string>{"library_options.ccl_bgt_affinity"}));
}

TEST(ConfigFile, StallCheckEnabledTurnsTheDisableFlagOff) {
  auto settings = parse_config_text("stall_check:\n    enabled: yes\n", "f");
  EXPECT_EQ(settings.flags, (Flags{{"--no-stall-check", "0"}}));
}

TEST(ConfigFile, ErrorsNameTheFileLineAndProblem) {
  EXPECT_NE(error_of("params:\n  fusion_threshold_mb: lots\n").find("cfg.yaml line 2"),
            std::string::npos);
  EXPECT_NE(error_of("params:\n  fusion_threshold_mb: lots\n").find("--fusion-threshold-mb"),
            std::string::npos);
  EXPECT_NE(error_of("params:\n  fusion_treshold_mb: 3\n")
                .find("unknown setting "
                      "'params.fusion_treshold_mb'"),
            std::string::npos);
  EXPECT_NE(error_of("nonsense:\n  a: 1\n").find("unknown setting 'nonsense.a'"),
            std::string::npos);
  EXPECT_NE(error_of("params: 3\n").find("must be a section"), std::string::npos);
  EXPECT_NE(error_of("params:\n\tcycle_time_ms: 1\n").find("tabs"), std::string::npos);
  EXPECT_NE(error_of("params:\n  - 1\n").find("lists"), std::string::npos);
  EXPECT_NE(error_of("params:\n  a:\n    b: 1\n").find("line 2"), std::string::npos);
  EXPECT_NE(error_of("params:\n  cycle_time_ms: [1, 2]\n").find("scalar"), std::string::npos);
  EXPECT_NE(error_of("params:\n  cycle_time_ms: '1\n").find("unterminated"), std::string::npos);
  EXPECT_NE(error_of("params:\n  cycle_time_ms: 1\n  cycle_time_ms: 2\n").find("repeated"),
            std::string::npos);
  EXPECT_NE(error_of("  cycle_time_ms: 1\n").find("outside a section"), std::string::npos);
  EXPECT_NE(error_of("autotune:\n  enabled: maybe\n").find("true or false"), std::string::npos);
  EXPECT_NE(
      error_of("params:\n  hierarchical_allreduce: 2\n").find("params.hierarchical_allreduce"),
      std::string::npos);
}

TEST(ConfigFile, CommentsBlankLinesAndDocumentMarkerAreSkipped) {
  auto settings = parse_config_text(
      "---\n# top\n\ntimeline:   # section comment\n  filename: t#1.json # file\n", "f");
  EXPECT_EQ(settings.flags, (Flags{{"--timeline-filename", "t#1.json"}}));
}

TEST(ConfigFile, KolorunFlagsOverrideTheFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("kolo_config_" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream out(path);
    out << "params:\n  cycle_time_ms: 10\n  cache_capacity: 7\nlogging:\n  level: debug\n"
           "autotune:\n  enabled: true\n";
  }
  auto no_env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  ParseResult parsed = parse_command_line(
      {"-np", "1", "--config-file", path.string(), "--cycle-time-ms", "3", "cmd"}, no_env);
  std::filesystem::remove(path);
  ASSERT_TRUE(parsed.options) << parsed.message;
  auto value_of = [&](const std::string& name) {
    std::string found;
    for (const auto& [key, value] : parsed.options->tuning_environment) {
      if (key == name) found = value;
    }
    return found;
  };
  EXPECT_EQ(value_of("HOROVOD_CYCLE_TIME"), "3");
  EXPECT_EQ(value_of("HOROVOD_CACHE_CAPACITY"), "7");
  EXPECT_EQ(value_of("HOROVOD_AUTOTUNE"), "1");
  EXPECT_EQ(parsed.options->log_level, "DEBUG");

  ParseResult missing =
      parse_command_line({"-np", "1", "--config-file", "/nonexistent.yaml", "cmd"}, no_env);
  EXPECT_FALSE(missing.options);
  EXPECT_NE(missing.message.find("/nonexistent.yaml"), std::string::npos) << missing.message;
}

}  // namespace
}  // namespace kolo::launcher
