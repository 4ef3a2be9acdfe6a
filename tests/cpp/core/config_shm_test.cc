// The shared-memory and hierarchical-allreduce knobs: defaults, KOLO_/HOROVOD_ names, flag
// spellings, validation, and that they are not reported as unknown.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/fake_env.h"
#include "core/config.h"

namespace kolo::core {
namespace {

TEST(ConfigShm, Defaults) {
  const Config config = Config::from_env(env_of({}), {});
  EXPECT_FALSE(config.shm_disable);
  EXPECT_EQ(config.shm_ring_bytes, 1u << 20);
  EXPECT_EQ(config.shm_allreduce_bytes, 1ull << 40);
  EXPECT_FALSE(config.hierarchical_allreduce.has_value());
}

TEST(ConfigShm, ArenaAllreduceLimit) {
  const Config zero =
      Config::from_env(env_of({{"KOLO_SHM_ALLREDUCE_BYTES", "0"}}), {"KOLO_SHM_ALLREDUCE_BYTES"});
  EXPECT_EQ(zero.shm_allreduce_bytes, 0u);
  EXPECT_TRUE(zero.unknown_variables.empty());
  const Config horovod = Config::from_env(env_of({{"HOROVOD_SHM_ALLREDUCE_BYTES", "4096"}}), {});
  EXPECT_EQ(horovod.shm_allreduce_bytes, 4096u);
  EXPECT_THROW(Config::from_env(env_of({{"KOLO_SHM_ALLREDUCE_BYTES", "-1"}}), {}), InvalidArgument);
}

TEST(ConfigShm, FoldWholeBytesDefaultsToAutoAndIsChecked) {
  EXPECT_EQ(Config::from_env(env_of({}), {}).shm_fold_whole_bytes, 0u);
  const Config set = Config::from_env(env_of({{"KOLO_SHM_FOLD_WHOLE_BYTES", "4096"}}),
                                      {"KOLO_SHM_FOLD_WHOLE_BYTES"});
  EXPECT_EQ(set.shm_fold_whole_bytes, 4096u);
  EXPECT_TRUE(set.unknown_variables.empty());
  EXPECT_THROW(Config::from_env(env_of({{"KOLO_SHM_FOLD_WHOLE_BYTES", "-8"}}), {}),
               InvalidArgument);
}

// auto (the default) leaves the choice to the ranks' probe (comm/single_copy.h): nullopt.
TEST(ConfigShm, SingleCopyIsAutoOrAFlag) {
  EXPECT_FALSE(Config::from_env(env_of({}), {}).shm_single_copy.has_value());
  const std::vector<std::string> name{"KOLO_SHM_SINGLE_COPY"};
  EXPECT_FALSE(Config::from_env(env_of({{name[0], "auto"}}), name).shm_single_copy.has_value());
  EXPECT_EQ(Config::from_env(env_of({{name[0], "1"}}), name).shm_single_copy,
            std::optional<bool>(true));
  EXPECT_EQ(Config::from_env(env_of({{name[0], "off"}}), name).shm_single_copy,
            std::optional<bool>(false));
  EXPECT_THROW(Config::from_env(env_of({{name[0], "sometimes"}}), name), InvalidArgument);
}

TEST(ConfigShm, FlagsInEverySpellingAndHorovodName) {
  const Config on = Config::from_env(env_of({{"KOLO_SHM_DISABLE", "yes"},
                                             {"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"},
                                             {"KOLO_SHM_RING_BYTES", "65536"}}),
                                     {"KOLO_SHM_DISABLE", "KOLO_SHM_RING_BYTES"});
  EXPECT_TRUE(on.shm_disable);
  EXPECT_EQ(on.hierarchical_allreduce, std::optional<bool>(true));
  EXPECT_EQ(on.shm_ring_bytes, 65536u);
  EXPECT_TRUE(on.unknown_variables.empty());
  const Config off = Config::from_env(env_of({{"KOLO_SHM_DISABLE", "OFF"},
                                              {"KOLO_HIERARCHICAL_ALLREDUCE", "false"},
                                              {"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"}}),
                                      {});
  EXPECT_FALSE(off.shm_disable);
  EXPECT_EQ(off.hierarchical_allreduce, std::optional<bool>(false));  // KOLO_ wins
}

TEST(ConfigShm, BadValuesNameTheVariable) {
  for (const auto& [name, value] :
       std::map<std::string, std::string>{{"KOLO_SHM_DISABLE", "maybe"},
                                          {"KOLO_SHM_RING_BYTES", "100000"},
                                          {"KOLO_HIERARCHICAL_ALLREDUCE", "2"}}) {
    try {
      Config::from_env(env_of({{name, value}}), {});
      ADD_FAILURE() << name << "=" << value << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kolo::core
