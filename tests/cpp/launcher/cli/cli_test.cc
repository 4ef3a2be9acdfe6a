#include "launcher/cli/cli.h"

#include <gtest/gtest.h>

#include <map>

namespace kolo::launcher {
namespace {

using Args = std::vector<std::string>;

EnvLookup no_env() {
  return [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
}

LaunchOptions parse_ok(const Args& args, const EnvLookup& env = no_env()) {
  ParseResult result = parse_command_line(args, env);
  EXPECT_TRUE(result.options.has_value()) << result.message;
  return result.options.value_or(LaunchOptions{});
}

std::string parse_error(const Args& args) {
  ParseResult result = parse_command_line(args, no_env());
  EXPECT_FALSE(result.options.has_value());
  EXPECT_EQ(result.exit_code, 2);
  return result.message;
}

TEST(NormalizeArgv, SingleDashLongFlagsBecomeDoubleDash) {
  EXPECT_EQ(
      normalize_argv({"-np", "4", "-hostfile", "hf", "-prefix-timestamp", "python"}),
      (Args{"--num-proc", "4", "--hostfile", "hf", "--prefix-output-with-timestamp", "python"}));
  EXPECT_EQ(normalize_argv({"-np=4", "python"}), (Args{"--num-proc=4", "python"}));
}

TEST(NormalizeArgv, StopsAtTheCommand) {
  // The command's own -np must reach it untouched.
  EXPECT_EQ(normalize_argv({"-np", "2", "python", "x.py", "-np", "5", "-hostfile", "y"}),
            (Args{"--num-proc", "2", "python", "x.py", "-np", "5", "-hostfile", "y"}));
  EXPECT_EQ(normalize_argv({"-np", "2", "--", "prog", "-np", "3"}),
            (Args{"--num-proc", "2", "--", "prog", "-np", "3"}));
}

TEST(NormalizeArgv, OptionValuesAreNotTheCommand) {
  // "-H"'s value "a:1" and "-p"'s "22" look like positionals; the "-np" after them is still ours.
  EXPECT_EQ(normalize_argv({"-H", "localhost:1", "-p", "22", "-np", "1", "cmd"}),
            (Args{"-H", "localhost:1", "-p", "22", "--num-proc", "1", "cmd"}));
  EXPECT_EQ(normalize_argv({"-p22", "-np", "1", "cmd"}), (Args{"-p22", "--num-proc", "1", "cmd"}));
  EXPECT_EQ(normalize_argv({"--verbose", "-np", "1", "cmd"}),
            (Args{"--verbose", "--num-proc", "1", "cmd"}));
}

TEST(ParseCommandLine, NpHostsAndCommand) {
  auto options = parse_ok({"-np", "3", "-H", "a:2,b:2", "python", "train.py", "--lr", "0.1"});
  EXPECT_EQ(options.num_proc, 3);
  EXPECT_EQ(options.hosts, "a:2,b:2");
  EXPECT_FALSE(options.hostfile);
  EXPECT_EQ(options.command, (Args{"python", "train.py", "--lr", "0.1"}));
}

TEST(ParseCommandLine, CommandFlagsAreNotEaten) {
  auto options = parse_ok(
      {"-np", "2", "python", "x.py", "-np", "5", "--verbose", "-h", "-H", "z:1", "--version"});
  EXPECT_EQ(options.num_proc, 2);
  EXPECT_FALSE(options.verbose);
  EXPECT_FALSE(options.hosts);
  EXPECT_EQ(options.command,
            (Args{"python", "x.py", "-np", "5", "--verbose", "-h", "-H", "z:1", "--version"}));
}

TEST(ParseCommandLine, DoubleDashSeparatesTheCommand) {
  auto options = parse_ok({"--num-proc", "2", "--", "-weird-program", "arg"});
  EXPECT_EQ(options.command, (Args{"-weird-program", "arg"}));
}

TEST(ParseCommandLine, HorovodrunStyleOptions) {
  auto options = parse_ok({"-np",        "4",
                           "-hostfile",  "hosts.txt",
                           "--verbose",  "-p",
                           "2222",       "-i",
                           "~/.ssh/key", "--start-timeout",
                           "60",         "--output-filename",
                           "logs",       "--log-level",
                           "debug",      "-prefix-timestamp",
                           "--gloo",     "--network-interfaces",
                           "eth0,eth1",  "cmd"});
  EXPECT_EQ(options.num_proc, 4);
  EXPECT_EQ(options.hostfile, "hosts.txt");
  EXPECT_TRUE(options.verbose);
  EXPECT_EQ(options.ssh_port, 2222);
  EXPECT_EQ(options.ssh_identity_file, "~/.ssh/key");
  EXPECT_EQ(options.start_timeout_seconds, 60);
  EXPECT_EQ(options.output_filename, "logs");
  EXPECT_EQ(options.log_level, "DEBUG");
  EXPECT_TRUE(options.prefix_output_with_timestamp);
  EXPECT_EQ(options.network_interfaces, (Args{"eth0", "eth1"}));
  EXPECT_EQ(options.command, (Args{"cmd"}));
}

TEST(ParseCommandLine, TimeoutsFromFlagThenEnvironmentThenDefault) {
  auto defaults = parse_ok({"-np", "1", "cmd"});
  EXPECT_EQ(defaults.start_timeout_seconds, 30);
  EXPECT_EQ(defaults.failure_grace_seconds, 5);

  std::map<std::string, std::string> vars{{"HOROVOD_START_TIMEOUT", "45"},
                                          {"KOLO_FAILURE_GRACE_SECONDS", "0.5"}};
  auto env = lookup_in(vars);
  auto from_env = parse_ok({"-np", "1", "cmd"}, env);
  EXPECT_EQ(from_env.start_timeout_seconds, 45);
  EXPECT_EQ(from_env.failure_grace_seconds, 0.5);

  vars["KOLO_START_TIMEOUT"] = "50";  // kolo's own name wins over Horovod's
  EXPECT_EQ(parse_ok({"-np", "1", "cmd"}, env).start_timeout_seconds, 50);

  auto flags =
      parse_ok({"-np", "1", "--start-timeout", "7", "--failure-grace-seconds", "0", "c"}, env);
  EXPECT_EQ(flags.start_timeout_seconds, 7);
  EXPECT_EQ(flags.failure_grace_seconds, 0);

  vars["HOROVOD_START_TIMEOUT"] = "soon";
  vars.erase("KOLO_START_TIMEOUT");
  ParseResult bad = parse_command_line({"-np", "1", "cmd"}, env);
  EXPECT_FALSE(bad.options);
  EXPECT_NE(bad.message.find("HOROVOD_START_TIMEOUT='soon'"), std::string::npos) << bad.message;
}

TEST(ParseCommandLine, TuningFlagsBecomeEnvironment) {
  auto options = parse_ok({"-np", "1", "--fusion-threshold-mb", "32", "--cycle-time-ms", "2.5",
                           "--cache-capacity", "0", "cmd"});
  auto has = [&](const std::string& name, const std::string& value) {
    for (const auto& entry : options.tuning_environment) {
      if (entry.first == name) return entry.second == value;
    }
    return false;
  };
  EXPECT_TRUE(has("HOROVOD_FUSION_THRESHOLD", "33554432"));
  EXPECT_TRUE(has("KOLO_FUSION_THRESHOLD", "33554432"));
  EXPECT_TRUE(has("HOROVOD_CYCLE_TIME", "2.5"));
  EXPECT_TRUE(has("HOROVOD_CACHE_CAPACITY", "0"));
  EXPECT_EQ(options.tuning_environment.size(), 6u);

  EXPECT_NE(parse_error({"-np", "1", "--cycle-time-ms", "-1", "cmd"}).find("--cycle-time-ms"),
            std::string::npos);
  EXPECT_NE(parse_error({"-np", "1", "--cache-capacity", "lots", "cmd"}).find("--cache-capacity"),
            std::string::npos);
}

TEST(ParseCommandLine, ObservabilityAndAutotuneFlags) {
  auto options = parse_ok({"-np", "2", "--timeline-filename", "/tmp/tl.json",
                           "--timeline-mark-cycles", "--autotune", "--autotune-log-file", "at.csv",
                           "--no-stall-check", "--stall-check-warning-time-seconds", "5",
                           "--stall-check-shutdown-time-seconds", "9.5", "python", "x.py"});
  std::map<std::string, std::string> env(options.tuning_environment.begin(),
                                         options.tuning_environment.end());
  EXPECT_EQ(env["HOROVOD_TIMELINE"], "/tmp/tl.json");
  EXPECT_EQ(env["HOROVOD_TIMELINE_MARK_CYCLES"], "1");
  EXPECT_EQ(env["KOLO_AUTOTUNE"], "1");
  EXPECT_EQ(env["HOROVOD_AUTOTUNE_LOG"], "at.csv");
  EXPECT_EQ(env["HOROVOD_STALL_CHECK_DISABLE"], "1");
  EXPECT_EQ(env["HOROVOD_STALL_CHECK_TIME_SECONDS"], "5");
  EXPECT_EQ(env["HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"], "9.5");
  // Switches take no value: the command is not swallowed.
  EXPECT_EQ(options.command, (Args{"python", "x.py"}));
  EXPECT_NE(parse_error({"-np", "2", "--stall-check-warning-time-seconds", "soon", "cmd"})
                .find("--stall-check-warning-time-seconds"),
            std::string::npos);
}

TEST(ParseCommandLine, Errors) {
  EXPECT_NE(parse_error({"-np", "2"}).find("no command"), std::string::npos);
  EXPECT_NE(parse_error({"-np", "0", "cmd"}).find("at least 1"), std::string::npos);
  EXPECT_NE(parse_error({"-np", "two", "cmd"}).find("kolorun: error:"), std::string::npos);
  EXPECT_NE(parse_error({"-np", "2", "--bogus", "cmd"}).find("unrecognized option '--bogus'"),
            std::string::npos);
  EXPECT_NE(parse_error({"-np", "2", "--min-np", "3", "cmd"}).find("outside --min-np"),
            std::string::npos);
  EXPECT_NE(parse_error({"-np", "2", "--reset-limit", "1", "cmd"}).find("need elastic mode"),
            std::string::npos);
  EXPECT_NE(parse_error({"-np", "2", "-H", "a:1", "-hostfile", "f", "cmd"}).find("kolorun: error"),
            std::string::npos);
  EXPECT_NE(parse_error({"-np", "2", "--log-level", "loud", "cmd"}).find("unknown log level"),
            std::string::npos);
  EXPECT_NE(parse_error({"-np", "2", "-p", "70000", "cmd"}).find("not a TCP port"),
            std::string::npos);
}

TEST(ParseCommandLine, HelpAndVersionExitZero) {
  for (const char* flag : {"-h", "--help"}) {
    ParseResult help = parse_command_line({flag}, no_env());
    EXPECT_FALSE(help.options);
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.message.find("-np,--num-proc"), std::string::npos);
    EXPECT_NE(help.message.find("--fusion-threshold-mb"), std::string::npos);
  }
  for (const char* flag : {"-v", "--version"}) {
    ParseResult version = parse_command_line({flag}, no_env());
    EXPECT_FALSE(version.options);
    EXPECT_EQ(version.exit_code, 0);
    EXPECT_NE(version.message.find(kKolorunVersion), std::string::npos);
  }
}

}  // namespace
}  // namespace kolo::launcher

namespace kolo::launcher {
namespace {

TEST(ParseCommandLine, MultiHostOptions) {
  LaunchOptions options =
      parse_ok({"-np", "4", "-H", "a,b", "--slots-per-host", "2", "-p", "2222", "-i", "/k/id", "-x",
                "WANDB_KEY", "--env", "OMP_NUM_THREADS=1", "python", "train.py", "-x", "5"});
  EXPECT_EQ(options.slots_per_host, 2);
  EXPECT_EQ(options.ssh_port, 2222);
  EXPECT_EQ(options.ssh_identity_file, "/k/id");
  EXPECT_EQ(options.forwarded_env, (Args{"WANDB_KEY", "OMP_NUM_THREADS=1"}));
  EXPECT_EQ(options.command, (Args{"python", "train.py", "-x", "5"}));  // the script's own -x

  options = parse_ok({"--hostfile", "/etc/volcano/worker.host", "--hosts-file-format", "volcano",
                      "-np", "16", "python", "t.py"});
  EXPECT_EQ(options.hostfile_format, HostfileFormat::volcano);
  // Inside Slurm -np may be left to the allocation: it stays 0 here and is resolved with hosts.
  EXPECT_EQ(parse_ok({"python", "t.py"}).num_proc, 0);
  // horovodrun's guide lines parse as written.
  options = parse_ok({"--gloo", "--start-timeout", "600", "-np", "4", "-H", "host1:2,host2:2",
                      "python", "train.py"});
  EXPECT_EQ(options.start_timeout_seconds, 600);
  EXPECT_EQ(options.hosts, "host1:2,host2:2");
}

TEST(ParseCommandLine, MultiHostOptionErrors) {
  EXPECT_NE(parse_error({"-np", "2", "--slots-per-host", "0", "cmd"}).find("at least 1"),
            std::string::npos);
  EXPECT_NE(parse_error({"-np", "2", "--hosts-file-format", "yaml", "cmd"}).find("kolorun: error"),
            std::string::npos);
  EXPECT_NE(parse_error({"-np", "2", "-x", "1BAD", "cmd"}).find("not an environment variable"),
            std::string::npos);
  EXPECT_NE(parse_error({"-np", "2", "-x", "A-B=1", "cmd"}).find("'A-B'"), std::string::npos);
}

TEST(ParseCommandLine, CheckBuildNeedsNoCommand) {
  EXPECT_TRUE(parse_ok({"--check-build"}).check_build);
  EXPECT_TRUE(parse_ok({"-cb"}).check_build);
}

}  // namespace
}  // namespace kolo::launcher
