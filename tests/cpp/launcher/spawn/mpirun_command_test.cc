#include "launcher/spawn/mpirun_command.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/errors.h"

namespace kolo::launcher {
namespace {

using Args = std::vector<std::string>;

LaunchOptions options_for(int np, Args command = {"python", "train.py"}) {
  LaunchOptions options;
  options.num_proc = np;
  options.command = std::move(command);
  return options;
}

// Index of `word` in `argv`, or -1.
long find(const Args& argv, const std::string& word) {
  auto it = std::find(argv.begin(), argv.end(), word);
  return it == argv.end() ? -1 : it - argv.begin();
}

TEST(MpirunCommand, HorovodrunDefaultsOnOneHost) {
  const Args argv = mpirun_command(options_for(4), {}, MpirunContext{"mpirun", false});
  EXPECT_EQ(argv, (Args{"mpirun", "--tag-output", "-np", "4", "-H", "localhost:4", "-bind-to",
                        "none", "-map-by", "slot", "-mca", "pml", "ob1", "-mca", "btl", "^openib",
                        "python", "train.py"}));
}

TEST(MpirunCommand, RootGetsAllowRunAsRootAndNoOversubscribeUnlessAsked) {
  const Args argv = mpirun_command(options_for(2), {}, MpirunContext{"/opt/mpi/bin/mpirun", true});
  EXPECT_EQ(argv.at(0), "/opt/mpi/bin/mpirun");
  EXPECT_EQ(argv.at(1), "--allow-run-as-root");
  EXPECT_EQ(find(argv, "--oversubscribe"), -1);
}

TEST(MpirunCommand, HostsOrHostfile) {
  LaunchOptions options = options_for(6);
  options.hosts = "a:2,b:4";
  Args argv = mpirun_command(options, {}, {});
  ASSERT_NE(find(argv, "-H"), -1);
  EXPECT_EQ(argv.at(find(argv, "-H") + 1), "a:2,b:4");
  options.hosts.reset();
  options.hostfile = "/tmp/hosts";
  argv = mpirun_command(options, {}, {});
  EXPECT_EQ(find(argv, "-H"), -1);
  EXPECT_EQ(argv.at(find(argv, "--hostfile") + 1), "/tmp/hosts");
}

TEST(MpirunCommand, ForwardsTheEnvironmentByNameButNotShellOrOuterJobVariables) {
  const Environment env = {{"PATH", "/bin"},
                           {"LD_LIBRARY_PATH", "/l"},
                           {"NCCL_DEBUG", "INFO"},
                           {"KOLO_CPU_OPERATIONS", "mpi"},
                           {"OMPI_COMM_WORLD_RANK", "3"},
                           {"PWD", "/x"},
                           {"BASH_FUNC_f%%", "() {}"},
                           {"odd-name", "1"}};
  const Args argv = mpirun_command(options_for(2), env, {});
  Args forwarded;
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "-x") forwarded.push_back(argv[i + 1]);
  }
  EXPECT_EQ(forwarded, (Args{"KOLO_CPU_OPERATIONS", "LD_LIBRARY_PATH", "NCCL_DEBUG", "PATH"}));
  // Values stay in mpirun's environment, never on its command line.
  EXPECT_EQ(find(argv, "/bin"), -1);
}

TEST(MpirunCommand, MpiArgsGoBeforeTheCommandWithShellQuoting) {
  LaunchOptions options = options_for(3, {"python", "x.py", "-np", "5"});
  options.mpi_args = "--oversubscribe -mca btl_tcp_if_include 'eth0' --report-bindings";
  const Args argv = mpirun_command(options, {}, {});
  const Args tail(argv.end() - 9, argv.end());
  EXPECT_EQ(tail, (Args{"--oversubscribe", "-mca", "btl_tcp_if_include", "eth0",
                        "--report-bindings", "python", "x.py", "-np", "5"}));
}

TEST(MpirunCommand, TranslatesKolorunOptions) {
  LaunchOptions options = options_for(2);
  options.ssh_port = 2222;
  options.network_interfaces = {"eth0", "eth1"};
  options.output_filename = "/tmp/logs";
  options.prefix_output_with_timestamp = true;
  const Args argv = mpirun_command(options, {}, {});
  EXPECT_EQ(argv.at(find(argv, "plm_rsh_args") + 1), "-p 2222");
  EXPECT_EQ(argv.at(find(argv, "btl_tcp_if_include") + 1), "eth0,eth1");
  EXPECT_EQ(argv.at(find(argv, "--output-filename") + 1), "/tmp/logs");
  EXPECT_NE(find(argv, "--timestamp-output"), -1);
}

TEST(MpirunEnvironment, ChoosesMpiAndCarriesKolorunSettings) {
  LaunchOptions options = options_for(2);
  options.start_timeout_seconds = 45;
  options.log_level = "DEBUG";
  options.tuning_environment = {{"KOLO_FUSION_THRESHOLD", "1024"}};
  const Environment env = mpirun_environment(
      options, {{"PATH", "/bin"}, {"HOROVOD_CPU_OPERATIONS", "gloo"}, {"PYTHONUNBUFFERED", "0"}});
  EXPECT_EQ(env.at("KOLO_CPU_OPERATIONS"), "mpi");
  EXPECT_EQ(env.at("HOROVOD_CPU_OPERATIONS"), "mpi");
  EXPECT_EQ(env.at("KOLO_START_TIMEOUT"), "45");
  EXPECT_EQ(env.at("KOLO_LOG_LEVEL"), "DEBUG");
  EXPECT_EQ(env.at("KOLO_FUSION_THRESHOLD"), "1024");
  EXPECT_EQ(env.at("PYTHONUNBUFFERED"), "0");  // the user's choice stays
  EXPECT_EQ(env.at("PATH"), "/bin");
}

TEST(SplitShellWords, QuotesAndEscapes) {
  EXPECT_EQ(split_shell_words("  a  'b c' \"d \\\"e\\\"\" f\\ g ''"),
            (Args{"a", "b c", "d \"e\"", "f g", ""}));
  EXPECT_EQ(split_shell_words(""), Args{});
  EXPECT_THROW((void)split_shell_words("-x 'open"), InvalidArgument);
}

EnvLookup no_env() {
  return [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
}

TEST(ParseMpiOptions, MpiAndMpiArgsReachTheOptions) {
  // The value of --mpi-args starts with a dash: it must not be read as a kolorun option.
  ParseResult parsed = parse_command_line(
      {"--mpi", "-np", "2", "--mpi-args", "--oversubscribe -x FOO", "python", "t.py"}, no_env());
  ASSERT_TRUE(parsed.options) << parsed.message;
  EXPECT_TRUE(parsed.options->use_mpi);
  EXPECT_EQ(parsed.options->mpi_args, "--oversubscribe -x FOO");
  EXPECT_EQ(parsed.options->command, (Args{"python", "t.py"}));
  parsed = parse_command_line({"-np", "2", "python", "t.py"}, no_env());
  ASSERT_TRUE(parsed.options);
  EXPECT_FALSE(parsed.options->use_mpi);
}

TEST(ParseMpiOptions, Errors) {
  ParseResult parsed =
      parse_command_line({"-np", "2", "--mpi-args=--oversubscribe", "python"}, no_env());
  EXPECT_FALSE(parsed.options);
  EXPECT_NE(parsed.message.find("--mpi-args only applies with --mpi"), std::string::npos)
      << parsed.message;
  parsed = parse_command_line({"-np", "2", "--mpi", "--gloo", "python"}, no_env());
  EXPECT_FALSE(parsed.options);
  EXPECT_EQ(parsed.exit_code, 2);
}

}  // namespace
}  // namespace kolo::launcher
