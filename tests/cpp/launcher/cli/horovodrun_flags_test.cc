// Every flag of horovodrun (horovod/runner/launch.py, parse_args, Horovod 0.28.1 and master) is
// accepted by kolorun's parser with horovodrun's meaning: the list below is written from that
// file, one entry per spelling. Flags that drive a kolo mechanism must set kolo's variable; flags
// kolo has no mechanism for must set Horovod's variable and say, in one warning, what kolo does
// instead. The elastic flags belong to the elastic issue and are still refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "launcher/cli/cli.h"
#include "launcher/spawn/mpirun_command.h"

namespace kolo::launcher {
namespace {

using Args = std::vector<std::string>;

EnvLookup no_env() {
  return [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
}

struct HorovodrunFlag {
  Args words;  // the flag and its value, as a launch line would have them
};

// launch.py's flags in its order, except -h/-v (exit at once), the command and the elastic group.
const std::vector<HorovodrunFlag>& horovodrun_flags() {
  static const std::vector<HorovodrunFlag> flags = {
      {{"-np", "2"}},
      {{"--num-proc", "2"}},
      {{"--disable-cache"}},
      {{"--start-timeout", "40"}},
      {{"--network-interfaces", "lo"}},
      {{"--network-interface", "lo"}},
      {{"--output-filename", "logs"}},
      {{"--verbose"}},
      {{"-p", "2222"}},
      {{"--ssh-port", "2222"}},
      {{"-i", "key"}},
      {{"--ssh-identity-file", "key"}},
      {{"--fusion-threshold-mb", "32"}},
      {{"--cycle-time-ms", "2.5"}},
      {{"--cache-capacity", "512"}},
      {{"--hierarchical-allreduce"}},
      {{"--no-hierarchical-allreduce"}},
      {{"--hierarchical-allgather"}},
      {{"--no-hierarchical-allgather"}},
      {{"--torus-allreduce"}},
      {{"--no-torus-allreduce"}},
      {{"--autotune"}},
      {{"--no-autotune"}},
      {{"--autotune-log-file", "at.csv"}},
      {{"--autotune-warmup-samples", "2"}},
      {{"--autotune-steps-per-sample", "5"}},
      {{"--autotune-bayes-opt-max-samples", "20"}},
      {{"--autotune-gaussian-process-noise", "0.8"}},
      {{"--slots-per-host", "2"}},
      {{"--timeline-filename", "tl.json"}},
      {{"--timeline-mark-cycles"}},
      {{"--no-timeline-mark-cycles"}},
      {{"--no-stall-check"}},
      {{"--stall-check"}},
      {{"--stall-check-warning-time-seconds", "20"}},
      {{"--stall-check-shutdown-time-seconds", "90"}},
      {{"--mpi-threads-disable"}},
      {{"--no-mpi-threads-disable"}},
      {{"--tcp"}},
      {{"--binding-args", "-bind-to core"}},
      {{"--num-nccl-streams", "2"}},
      {{"--thread-affinity", "1"}},
      {{"--gloo-timeout-seconds", "45"}},
      {{"--log-level", "INFO"}},
      {{"--log-with-timestamp"}},
      {{"--log-without-timestamp"}},
      {{"-prefix-timestamp"}},
      {{"--prefix-output-with-timestamp"}},
      {{"--log-hide-timestamp"}},
      {{"--no-log-hide-timestamp"}},
      {{"-H", "localhost:2"}},
      {{"--hosts", "localhost:2"}},
      {{"-hostfile", "hosts"}},
      {{"--hostfile", "hosts"}},
      {{"--gloo"}},
      {{"--mpi"}},
      {{"--jsrun"}},
      {{"-cb"}},
      {{"--check-build"}},
      {{"--config-file", "/nonexistent/kolo-test-config.yaml"}},  // read (and refused) later
  };
  return flags;
}

ParseResult parse(const Args& flag_words) {
  Args args = {"-np", "2"};
  args.insert(args.end(), flag_words.begin(), flag_words.end());
  args.insert(args.end(), {"python", "train.py"});
  return parse_command_line(args, no_env());
}

std::map<std::string, std::string> environment_of(const LaunchOptions& options) {
  return {options.tuning_environment.begin(), options.tuning_environment.end()};
}

TEST(HorovodrunFlags, EveryLaunchPyFlagIsAccepted) {
  for (const auto& flag : horovodrun_flags()) {
    if (flag.words.front() == "--config-file") continue;  // its file must exist: checked below
    ParseResult result = parse(flag.words);
    ASSERT_TRUE(result.options.has_value()) << flag.words.front() << ": " << result.message;
    if (flag.words.front() != "-cb" && flag.words.front() != "--check-build") {
      EXPECT_EQ(result.options->command, (Args{"python", "train.py"})) << flag.words.front();
    }
  }
  // --config-file is recognised: the error is about the file, not the flag.
  ParseResult config = parse({"--config-file", "/nonexistent/kolo-test-config.yaml"});
  EXPECT_EQ(config.message.find("unrecognized"), std::string::npos) << config.message;
  EXPECT_NE(config.message.find("kolo-test-config.yaml"), std::string::npos) << config.message;
}

TEST(HorovodrunFlags, AllOfThemOnOneLine) {
  Args line;
  for (const auto& flag : horovodrun_flags()) {
    const std::string& name = flag.words.front();
    // One of each exclusive pair, no config file, and no -cb (it runs nothing).
    if (name == "--hosts" || name == "-hostfile" || name == "--hostfile" || name == "--gloo" ||
        name == "-cb" || name == "--check-build" || name == "--config-file") {
      continue;
    }
    line.insert(line.end(), flag.words.begin(), flag.words.end());
  }
  line.insert(line.end(), {"python", "train.py", "--epochs", "1"});
  ParseResult result = parse_command_line(line, no_env());
  ASSERT_TRUE(result.options.has_value()) << result.message;
  EXPECT_EQ(result.options->command, (Args{"python", "train.py", "--epochs", "1"}));
}

TEST(HorovodrunFlags, FlagsWithAKoloMechanismDriveIt) {
  auto env = [](const Args& words) {
    ParseResult result = parse(words);
    EXPECT_TRUE(result.options.has_value()) << result.message;
    EXPECT_TRUE(result.options->warnings.empty()) << words.front();
    return environment_of(*result.options);
  };
  EXPECT_EQ(env({"--hierarchical-allreduce"})["KOLO_HIERARCHICAL_ALLREDUCE"], "1");
  EXPECT_EQ(env({"--hierarchical-allreduce"})["HOROVOD_HIERARCHICAL_ALLREDUCE"], "1");
  EXPECT_EQ(env({"--no-hierarchical-allreduce"})["KOLO_HIERARCHICAL_ALLREDUCE"], "0");
  EXPECT_EQ(env({"--no-autotune"})["KOLO_AUTOTUNE"], "0");
  EXPECT_EQ(env({"--no-timeline-mark-cycles"})["KOLO_TIMELINE_MARK_CYCLES"], "0");
  EXPECT_EQ(env({"--stall-check"})["KOLO_STALL_CHECK_DISABLE"], "0");
  // Horovod's Gloo timeout is kolo's peer timeout.
  auto timeout = env({"--gloo-timeout-seconds", "45"});
  EXPECT_EQ(timeout["KOLO_PEER_TIMEOUT"], "45");
  EXPECT_EQ(timeout["HOROVOD_GLOO_TIMEOUT_SECONDS"], "45");
  EXPECT_EQ(timeout.count("KOLO_GLOO_TIMEOUT_SECONDS"), 0u);
  EXPECT_EQ(env({"--tcp"})["NCCL_IB_DISABLE"], "1");
  EXPECT_EQ(env({"--thread-affinity", "1"})["KOLO_THREAD_AFFINITY"], "1");
  EXPECT_EQ(env({"--log-with-timestamp"})["KOLO_LOG_HIDE_TIME"], "0");
  EXPECT_EQ(env({"--no-log-hide-timestamp"})["KOLO_LOG_HIDE_TIME"], "0");
  EXPECT_EQ(env({"--log-hide-timestamp"})["KOLO_LOG_HIDE_TIME"], "1");
  // What kolo always does: Horovod's variable, no warning.
  EXPECT_EQ(env({"--no-torus-allreduce"})["HOROVOD_TORUS_ALLREDUCE"], "0");
  EXPECT_EQ(env({"--no-hierarchical-allgather"})["HOROVOD_HIERARCHICAL_ALLGATHER"], "0");
}

TEST(HorovodrunFlags, TheLastOfASettingWinsAsWithArgparse) {
  auto options =
      parse_command_line({"-np", "2", "--autotune", "--no-autotune", "--no-hierarchical-allreduce",
                          "--hierarchical-allreduce", "cmd"},
                         no_env());
  ASSERT_TRUE(options.options.has_value()) << options.message;
  auto env = environment_of(*options.options);
  EXPECT_EQ(env["KOLO_AUTOTUNE"], "0");
  EXPECT_EQ(env["KOLO_HIERARCHICAL_ALLREDUCE"], "1");
  EXPECT_EQ(options.options->tuning_environment.size(), 4u);  // one KOLO_ + HOROVOD_ pair each
}

TEST(HorovodrunFlags, FlagsWithoutAKoloMechanismWarnOnceSayingWhatKoloDoes) {
  const std::map<std::string, Args> cases = {
      {"HOROVOD_HIERARCHICAL_ALLGATHER", {"--hierarchical-allgather"}},
      {"HOROVOD_TORUS_ALLREDUCE", {"--torus-allreduce"}},
      {"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", {"--autotune-bayes-opt-max-samples", "20"}},
      {"HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", {"--autotune-gaussian-process-noise", "0.8"}},
      {"HOROVOD_MPI_THREADS_DISABLE", {"--mpi-threads-disable"}},
      {"HOROVOD_NUM_NCCL_STREAMS", {"--num-nccl-streams", "2"}},
  };
  for (const auto& [variable, words] : cases) {
    ParseResult result = parse(words);
    ASSERT_TRUE(result.options.has_value()) << result.message;
    auto env = environment_of(*result.options);
    EXPECT_EQ(env.count(variable), 1u) << words.front();
    for (const auto& [name, value] : env) {
      EXPECT_NE(name.rfind("KOLO_", 0), 0u) << words.front() << " set " << name;
    }
    ASSERT_EQ(result.options->warnings.size(), 1u) << words.front();
    EXPECT_NE(result.options->warnings[0].find(words.front()), std::string::npos);
    EXPECT_NE(result.options->warnings[0].find("kolo"), std::string::npos);
  }
  ParseResult jsrun = parse({"--jsrun"});
  ASSERT_TRUE(jsrun.options.has_value());
  ASSERT_EQ(jsrun.options->warnings.size(), 1u);
  EXPECT_NE(jsrun.options->warnings[0].find("jsrun"), std::string::npos);
}

TEST(HorovodrunFlags, BindingArgsReplaceMpirunsDefaultBinding) {
  ParseResult with_mpi = parse({"--mpi", "--binding-args", "-bind-to core -map-by socket"});
  ASSERT_TRUE(with_mpi.options.has_value()) << with_mpi.message;
  EXPECT_TRUE(with_mpi.options->warnings.empty());
  const Args argv = mpirun_command(*with_mpi.options, {}, MpirunContext{"mpirun", false});
  auto at = std::find(argv.begin(), argv.end(), "-bind-to");
  ASSERT_NE(at, argv.end());
  EXPECT_EQ(Args(at, at + 4), (Args{"-bind-to", "core", "-map-by", "socket"}));
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "none"), argv.end());

  ParseResult without_mpi = parse({"--binding-args", "-bind-to core"});
  ASSERT_TRUE(without_mpi.options.has_value()) << without_mpi.message;
  ASSERT_EQ(without_mpi.options->warnings.size(), 1u);
  EXPECT_NE(without_mpi.options->warnings[0].find("--mpi"), std::string::npos);
}

TEST(HorovodrunFlags, ConfigFileKeysOfTheseFlagsActAsTheFlags) {
  char path[] = "/tmp/kolo-horovodrun-flags-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string text =
      "params:\n  torus_allreduce: true\nlibrary_options:\n  gloo_timeout_seconds: 50\n"
      "  thread_affinity: 1\nlogging:\n  with_timestamp: true\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  ParseResult result = parse({"--config-file", path, "--gloo-timeout-seconds", "70"});
  unlink(path);
  ASSERT_TRUE(result.options.has_value()) << result.message;
  auto env = environment_of(*result.options);
  EXPECT_EQ(env["KOLO_PEER_TIMEOUT"], "70");  // the command line beats the file
  EXPECT_EQ(env["KOLO_THREAD_AFFINITY"], "1");
  EXPECT_EQ(env["KOLO_LOG_HIDE_TIME"], "0");
  EXPECT_EQ(env["HOROVOD_TORUS_ALLREDUCE"], "1");
  ASSERT_EQ(result.options->warnings.size(), 1u);
  EXPECT_NE(result.options->warnings[0].find("--torus-allreduce"), std::string::npos);
}

TEST(HorovodrunFlags, ElasticFlagsTurnOnElasticMode) {
  ParseResult result =
      parse({"-np", "2", "--min-np", "1", "--max-np", "4", "--elastic-timeout", "60",
             "--reset-limit", "3", "--blacklist-cooldown-range", "1", "5", "--slots", "2"});
  ASSERT_TRUE(result.options.has_value()) << result.message;
  const LaunchOptions& options = *result.options;
  EXPECT_TRUE(options.elastic);
  EXPECT_EQ(options.num_proc, 2);
  EXPECT_EQ(options.min_np, 1);
  EXPECT_EQ(options.max_np, 4);
  EXPECT_EQ(options.elastic_timeout_seconds, 60);
  EXPECT_EQ(options.reset_limit, 3);
  ASSERT_TRUE(options.blacklist_cooldown.has_value());
  EXPECT_EQ(options.blacklist_cooldown->first, 1);
  EXPECT_EQ(options.blacklist_cooldown->second, 5);
  EXPECT_EQ(options.slots_per_host, 2);

  ParseResult script = parse({"--min-np", "2", "--host-discovery-script", "./d.sh"});
  ASSERT_TRUE(script.options.has_value()) << script.message;
  EXPECT_TRUE(script.options->elastic);
  EXPECT_EQ(script.options->num_proc, 2);  // -np defaults to --min-np
  EXPECT_EQ(script.options->max_np, 0);    // every available slot
  EXPECT_EQ(script.options->elastic_timeout_seconds, 600);

  ParseResult plain = parse({"-np", "2"});
  ASSERT_TRUE(plain.options.has_value());
  EXPECT_FALSE(plain.options->elastic);
}

// Each elastic flag takes exactly its number of values: the command right after it stays whole
// (--blacklist-cooldown-range used to take every following word as a value).
TEST(HorovodrunFlags, EachElasticFlagTakesItsValuesAndLeavesTheCommand) {
  const Args command = {"python", "train.py", "--epochs", "1"};
  for (const Args& flag :
       {Args{"--min-np", "1"}, Args{"--min-num-proc", "1"}, Args{"--max-np", "4"},
        Args{"--max-num-proc", "4"}, Args{"--host-discovery-script", "./d.sh"},
        Args{"--elastic-timeout", "60"}, Args{"--reset-limit", "3"},
        Args{"--blacklist-cooldown-range", "1", "2"}}) {
    Args line = {"-np", "2", "--min-np", "1"};
    line.insert(line.end(), flag.begin(), flag.end());
    line.insert(line.end(), command.begin(), command.end());
    ParseResult result = parse_command_line(line, no_env());
    ASSERT_TRUE(result.options.has_value()) << flag.front() << ": " << result.message;
    EXPECT_EQ(result.options->command, command) << flag.front();
  }
  ParseResult range = parse_command_line(
      {"--min-np", "2", "--blacklist-cooldown-range", "1", "2", "python", "t.py"}, no_env());
  ASSERT_TRUE(range.options.has_value()) << range.message;
  EXPECT_EQ(range.options->blacklist_cooldown, std::make_pair(1.0, 2.0));
  // One value short: refused, not filled from the command.
  ParseResult short_range =
      parse_command_line({"--min-np", "2", "--blacklist-cooldown-range", "1"}, no_env());
  EXPECT_FALSE(short_range.options.has_value());
}

TEST(HorovodrunFlags, DiscoveryIntervalComesFromTheEnvironment) {
  const auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "HOROVOD_ELASTIC_DISCOVERY_INTERVAL") return "0.25";
    return std::nullopt;
  };
  ParseResult result =
      parse_command_line({"--min-np", "1", "--host-discovery-script", "d.sh", "python"}, env);
  ASSERT_TRUE(result.options.has_value()) << result.message;
  EXPECT_EQ(result.options->discovery_interval_seconds, 0.25);
  ParseResult plain =
      parse_command_line({"--min-np", "1", "--host-discovery-script", "d.sh", "python"}, no_env());
  ASSERT_TRUE(plain.options.has_value());
  EXPECT_EQ(plain.options->discovery_interval_seconds, 1.0);
  const auto bad = [](const std::string& name) -> std::optional<std::string> {
    if (name == "KOLO_ELASTIC_DISCOVERY_INTERVAL") return "0";
    return std::nullopt;
  };
  EXPECT_FALSE(
      parse_command_line({"--min-np", "1", "--host-discovery-script", "d.sh", "python"}, bad)
          .options.has_value());
}

TEST(HorovodrunFlags, ElasticFlagsRefuseContradictions) {
  for (const Args& words :
       {Args{"-np", "5", "--max-np", "4"}, Args{"--min-np", "3", "--max-np", "2"},
        Args{"--min-np", "0"},
        Args{"-np", "2", "--min-np", "1", "--blacklist-cooldown-range", "5", "1"},
        Args{"-np", "2", "--min-np", "1", "-H", "a:2", "--host-discovery-script", "d.sh"},
        Args{"-np", "2", "--elastic-timeout", "60"}}) {
    ParseResult result = parse(words);
    EXPECT_FALSE(result.options.has_value()) << words.front() << " " << words.back();
    EXPECT_EQ(result.exit_code, 2) << result.message;
  }
}

}  // namespace
}  // namespace kolo::launcher
