#include "launcher/spawn/rank_environment.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "base/errors.h"
#include "launcher/cli/tuning_flags.h"

namespace kolo::launcher {
namespace {

JobSettings sample_job() {
  JobSettings job;
  job.rendezvous_addr = "127.0.0.1";
  job.rendezvous_port = 40123;
  job.secret_hex = std::string(64, 'a');
  job.start_timeout_seconds = 12.5;
  return job;
}

TEST(RankEnvironment, LaunchVariablesUnderBothNames) {
  const SlotAssignment slot{"b", 2, 3, 0, 1, 1, 2};
  Environment env =
      build_rank_environment({{"PATH", "/bin"}, {"HOME", "/root"}}, sample_job(), slot);
  EXPECT_EQ(env["PATH"], "/bin");
  EXPECT_EQ(env["HOME"], "/root");
  EXPECT_EQ(env["KOLO_RANK"], "2");
  EXPECT_EQ(env["KOLO_SIZE"], "3");
  EXPECT_EQ(env["KOLO_HOSTNAME"], "b");
  EXPECT_EQ(env["KOLO_RENDEZVOUS_ADDR"], "127.0.0.1");
  EXPECT_EQ(env["KOLO_RENDEZVOUS_PORT"], "40123");
  EXPECT_EQ(env["KOLO_SECRET"], std::string(64, 'a'));
  EXPECT_EQ(env["KOLO_START_TIMEOUT"], "12.5");
  EXPECT_EQ(env["HOROVOD_RANK"], "2");
  EXPECT_EQ(env["HOROVOD_SIZE"], "3");
  EXPECT_EQ(env["HOROVOD_HOSTNAME"], "b");
  EXPECT_EQ(env["HOROVOD_LOCAL_RANK"], "0");
  EXPECT_EQ(env["HOROVOD_LOCAL_SIZE"], "1");
  EXPECT_EQ(env["HOROVOD_CROSS_RANK"], "1");
  EXPECT_EQ(env["HOROVOD_CROSS_SIZE"], "2");
  EXPECT_EQ(env["KOLO_LOCAL_RANK"], "0");
  EXPECT_EQ(env["KOLO_CROSS_SIZE"], "2");
  EXPECT_EQ(env["HOROVOD_CONTROLLER"], "gloo");
  EXPECT_EQ(env["HOROVOD_CPU_OPERATIONS"], "gloo");
  EXPECT_EQ(env["PYTHONUNBUFFERED"], "1");
  EXPECT_EQ(env.count("KOLO_LOG_LEVEL"), 0u);
}

TEST(RankEnvironment, LaunchVariablesOverrideInheritedOnesButNotPythonBuffering) {
  // kolorun started from inside another job must not leak the outer job's identity.
  Environment inherited{{"KOLO_RANK", "7"}, {"HOROVOD_SIZE", "9"}, {"PYTHONUNBUFFERED", "0"}};
  Environment env =
      build_rank_environment(inherited, sample_job(), SlotAssignment{"a", 0, 1, 0, 1, 0, 1});
  EXPECT_EQ(env["KOLO_RANK"], "0");
  EXPECT_EQ(env["HOROVOD_SIZE"], "1");
  EXPECT_EQ(env["PYTHONUNBUFFERED"], "0");
}

TEST(RankEnvironment, LogLevelAndTuningFlags) {
  JobSettings job = sample_job();
  job.log_level = "DEBUG";
  job.extra = tuning_flag_environment(tuning_flags()[0], "64");
  Environment env = build_rank_environment({{"KOLO_FUSION_THRESHOLD", "1"}}, job,
                                           SlotAssignment{"a", 0, 1, 0, 1, 0, 1});
  EXPECT_EQ(env["KOLO_LOG_LEVEL"], "DEBUG");
  EXPECT_EQ(env["HOROVOD_LOG_LEVEL"], "DEBUG");
  EXPECT_EQ(env["HOROVOD_FUSION_THRESHOLD"], "67108864");
  EXPECT_EQ(env["KOLO_FUSION_THRESHOLD"], "67108864");  // the flag beats an exported KOLO_*
}

TEST(TuningFlags, TableAndConversions) {
  auto flags = tuning_flags();
  // horovodrun's tuning, hierarchy, library and logging flags, and kolo's --bind-to
  ASSERT_EQ(flags.size(), 33u);
  for (size_t i = 0; i < flags.size(); ++i) {
    EXPECT_EQ(find_tuning_flag(flags[i].flag), &flags[i]) << flags[i].flag << " listed twice";
  }
  EXPECT_EQ(flags[0].flag, "--fusion-threshold-mb");
  EXPECT_EQ(flags[1].flag, "--cycle-time-ms");
  EXPECT_EQ(flags[2].flag, "--cache-capacity");
  using Vars = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(tuning_flag_environment(flags[0], "0"),
            (Vars{{"KOLO_FUSION_THRESHOLD", "0"}, {"HOROVOD_FUSION_THRESHOLD", "0"}}));
  EXPECT_EQ(tuning_flag_environment(flags[1], "0.25"),
            (Vars{{"KOLO_CYCLE_TIME", "0.25"}, {"HOROVOD_CYCLE_TIME", "0.25"}}));
  EXPECT_EQ(tuning_flag_environment(flags[2], "2048"),
            (Vars{{"KOLO_CACHE_CAPACITY", "2048"}, {"HOROVOD_CACHE_CAPACITY", "2048"}}));
  EXPECT_THROW(tuning_flag_environment(flags[0], "1.5"), InvalidArgument);
  EXPECT_THROW(tuning_flag_environment(flags[0], "-1"), InvalidArgument);
  EXPECT_THROW(tuning_flag_environment(flags[0], "99999999999999999"), InvalidArgument);
  EXPECT_THROW(tuning_flag_environment(flags[1], "nan"), InvalidArgument);
  EXPECT_THROW(tuning_flag_environment(flags[1], ""), InvalidArgument);
  EXPECT_THROW(tuning_flag_environment(flags[2], "1e3"), InvalidArgument);
}

TEST(TuningFlags, PathsAndSwitches) {
  using Vars = std::vector<std::pair<std::string, std::string>>;
  const TuningFlag* bind_to = find_tuning_flag("--bind-to");
  ASSERT_NE(bind_to, nullptr);
  EXPECT_EQ(tuning_flag_environment(*bind_to, "none"),
            (Vars{{"KOLO_BIND_TO", "none"}, {"HOROVOD_BIND_TO", "none"}}));
  const TuningFlag* timeline = find_tuning_flag("--timeline-filename");
  ASSERT_NE(timeline, nullptr);
  EXPECT_EQ(tuning_flag_environment(*timeline, "/tmp/t l.json"),
            (Vars{{"KOLO_TIMELINE", "/tmp/t l.json"}, {"HOROVOD_TIMELINE", "/tmp/t l.json"}}));
  EXPECT_THROW(tuning_flag_environment(*timeline, ""), InvalidArgument);
  const TuningFlag* no_stall = find_tuning_flag("--no-stall-check");
  ASSERT_NE(no_stall, nullptr);
  EXPECT_EQ(tuning_flag_environment(*no_stall, "1").back(),
            (std::pair<std::string, std::string>{"HOROVOD_STALL_CHECK_DISABLE", "1"}));
  EXPECT_EQ(tuning_flag_environment(*no_stall, "False").back().second, "0");
  EXPECT_THROW(tuning_flag_environment(*no_stall, "sometimes"), InvalidArgument);
  EXPECT_EQ(find_tuning_flag("--no-such-flag"), nullptr);
}

TEST(EnvHelpers, EnvpStringsAndProcessEnvironment) {
  EXPECT_EQ(to_envp_strings({{"B", "2"}, {"A", "x=y"}}),
            (std::vector<std::string>{"A=x=y", "B=2"}));
  ::setenv("KOLO_LAUNCHER_ENV_TEST", "present", 1);
  EXPECT_EQ(current_environment()["KOLO_LAUNCHER_ENV_TEST"], "present");
  EXPECT_EQ(process_env_lookup()("KOLO_LAUNCHER_ENV_TEST"), "present");
  EXPECT_EQ(process_env_lookup()("KOLO_LAUNCHER_ENV_TEST_ABSENT"), std::nullopt);
  EXPECT_EQ(format_seconds(30), "30");
  EXPECT_EQ(format_seconds(0.5), "0.5");
}

}  // namespace
}  // namespace kolo::launcher
