#include "core/config.h"

#include <gtest/gtest.h>

#include <map>

#include "base/errors.h"
#include "base/fake_env.h"
#include "bootstrap/launch_info.h"

namespace kolo::core {
namespace {

using bootstrap::LaunchInfo;

std::string source_of(const Config& config, const std::string& name) {
  for (const auto& [setting, source] : config.sources) {
    if (setting == name) return source;
  }
  return "";
}

TEST(Config, DefaultsMatchHorovod) {
  Config config = Config::from_env(env_of({}), {});
  EXPECT_EQ(config.cycle_time, std::chrono::microseconds(1000));
  EXPECT_EQ(config.fusion_threshold, 128ull * 1024 * 1024);
  EXPECT_EQ(config.cache_capacity, 1024u);
  EXPECT_EQ(config.log_level, LogLevel::warning);
  EXPECT_EQ(config.peer_timeout, std::chrono::seconds(30));
  EXPECT_EQ(source_of(config, "CYCLE_TIME"), "default");
}

TEST(Config, HorovodVariablesAreHonoured) {
  Config config = Config::from_env(
      env_of({{"HOROVOD_FUSION_THRESHOLD", "1048576"}, {"HOROVOD_CYCLE_TIME", "2.5"},
              {"HOROVOD_CACHE_CAPACITY", "0"}, {"HOROVOD_LOG_LEVEL", "debug"}}),
      {});
  EXPECT_EQ(config.fusion_threshold, 1048576u);
  EXPECT_EQ(config.cycle_time, std::chrono::microseconds(2500));
  EXPECT_EQ(config.cache_capacity, 0u);
  EXPECT_EQ(config.log_level, LogLevel::debug);
  EXPECT_EQ(source_of(config, "FUSION_THRESHOLD"), "HOROVOD_FUSION_THRESHOLD");
}

TEST(Config, KoloWinsOverHorovod) {
  Config config = Config::from_env(
      env_of({{"HOROVOD_FUSION_THRESHOLD", "100"}, {"KOLO_FUSION_THRESHOLD", "200"},
              {"KOLO_PEER_TIMEOUT", "0.5"}, {"HOROVOD_PEER_TIMEOUT", "9"}}),
      {});
  EXPECT_EQ(config.fusion_threshold, 200u);
  EXPECT_EQ(config.peer_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(source_of(config, "FUSION_THRESHOLD"), "KOLO_FUSION_THRESHOLD");
}

TEST(Config, BadValuesNameTheVariable) {
  try {
    (void)Config::from_env(env_of({{"KOLO_CACHE_CAPACITY", "lots"}}), {});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("KOLO_CACHE_CAPACITY='lots'"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)Config::from_env(env_of({{"HOROVOD_LOG_LEVEL", "chatty"}}), {}),
               InvalidArgument);
  EXPECT_THROW((void)Config::from_env(env_of({{"KOLO_FUSION_THRESHOLD", "-1"}}), {}),
               InvalidArgument);
}

TEST(Config, UnknownKoloVariablesAreReported) {
  Config config = Config::from_env(env_of({}), {"KOLO_FUSION_TRESHOLD", "KOLO_RANK",
                                                "HOROVOD_WHATEVER", "PATH"});
  ASSERT_EQ(config.unknown_variables.size(), 1u);
  EXPECT_EQ(config.unknown_variables[0], "KOLO_FUSION_TRESHOLD");
}

// Every documented KOLO_* name is one setting table's row (base/env.cc), read by the launcher or
// the MPI plugin loader as much as by the config: none of them is reported as unknown.
TEST(Config, SettingsOfTheLauncherAndTheMpiPluginAreNotUnknown) {
  Config config =
      Config::from_env(env_of({}), {"KOLO_MPI_PLUGIN", "KOLO_MPIRUN", "KOLO_FAILURE_GRACE_SECONDS",
                                    "KOLO_STAGE_THROUGH_HOST", "KOLO_GLOO_RENDEZVOUS_ADDR",
                                    "KOLO_LAUNCHER_PID", "KOLO_FAULT_BOUNDS", "KOLO_MPI_PLUGINS"});
  EXPECT_EQ(config.unknown_variables, std::vector<std::string>{"KOLO_MPI_PLUGINS"});
}

TEST(LaunchInfo, ReadsKoloThenHorovodNames) {
  LaunchInfo info = LaunchInfo::from_env(env_of({{"HOROVOD_RANK", "2"}, {"HOROVOD_SIZE", "4"},
                                                  {"KOLO_RENDEZVOUS_ADDR", "127.0.0.1"},
                                                  {"KOLO_RENDEZVOUS_PORT", "5555"}}));
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.rendezvous_port, 5555);
}

TEST(LaunchInfo, AloneWithoutLauncher) {
  LaunchInfo info = LaunchInfo::from_env(env_of({}));
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.size, 1);
}

TEST(LaunchInfo, InconsistentValuesFail) {
  EXPECT_THROW((void)LaunchInfo::from_env(env_of({{"KOLO_RANK", "3"}, {"KOLO_SIZE", "2"}})),
               InvalidArgument);
  EXPECT_THROW((void)LaunchInfo::from_env(env_of({{"KOLO_RANK", "0"}, {"KOLO_SIZE", "2"}})),
               InvalidArgument);  // no rendezvous address
}

TEST(ConfigCpuOperations, GlooMpiOrAClearError) {
  EXPECT_EQ(Config::from_env(env_of({}), {}).cpu_operations, backends::CpuOperations::kolo);
  EXPECT_EQ(Config::from_env(env_of({{"HOROVOD_CPU_OPERATIONS", "gloo"}}), {}).cpu_operations,
            backends::CpuOperations::kolo);
  EXPECT_EQ(Config::from_env(env_of({{"HOROVOD_CPU_OPERATIONS", "MPI"}}), {}).cpu_operations,
            backends::CpuOperations::mpi);
  // kolo's own name wins over Horovod's (kolorun exports HOROVOD_CPU_OPERATIONS=gloo).
  EXPECT_EQ(Config::from_env(
                env_of({{"HOROVOD_CPU_OPERATIONS", "gloo"}, {"KOLO_CPU_OPERATIONS", "mpi"}}), {})
                .cpu_operations,
            backends::CpuOperations::mpi);
  try {
    (void)Config::from_env(env_of({{"HOROVOD_CPU_OPERATIONS", "ccl"}}), {});
    ADD_FAILURE() << "ccl accepted";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("HOROVOD_CPU_OPERATIONS='ccl'"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace kolo::core
