// The one environment reader: KOLO_<name> over HOROVOD_<name> over nothing (empty values count as
// unset), a lookup into a map, and a setting read that is missing from the table is a loud error
// instead of a setting that is silently warned about as unknown.
#include <gtest/gtest.h>

#include <cstdlib>

#include "base/env.h"
#include "base/errors.h"

namespace kolo {
namespace {

TEST(SettingTableTest, KoloWinsOverHorovodAndEmptyMeansUnset) {
  const std::map<std::string, std::string> vars = {{"KOLO_CYCLE_TIME", "2"},
                                                   {"HOROVOD_CYCLE_TIME", "5"},
                                                   {"KOLO_FUSION_THRESHOLD", ""},
                                                   {"HOROVOD_FUSION_THRESHOLD", "64"}};
  const EnvLookup lookup = lookup_in(vars);
  auto cycle = find_setting(lookup, "CYCLE_TIME");
  ASSERT_TRUE(cycle.has_value());
  EXPECT_EQ(cycle->variable, "KOLO_CYCLE_TIME");
  EXPECT_EQ(cycle->value, "2");
  auto fusion = find_setting(lookup, "FUSION_THRESHOLD");
  ASSERT_TRUE(fusion.has_value());
  EXPECT_EQ(fusion->variable, "HOROVOD_FUSION_THRESHOLD");
  EXPECT_EQ(fusion->value, "64");
  EXPECT_FALSE(find_setting(lookup, "CACHE_CAPACITY").has_value());
}

TEST(SettingTableTest, ASettingMissingFromTheTableIsAnError) {
  EXPECT_THROW((void)find_setting(lookup_in({}), "NOT_A_SETTING"), Error);
  EXPECT_TRUE(is_setting("MPI_PLUGIN"));
  EXPECT_TRUE(is_setting("MPIRUN"));
  EXPECT_FALSE(is_setting("MPI_PLUGINS"));
}

TEST(SettingTableTest, UnknownKoloNamesOnly) {
  EXPECT_EQ(unknown_kolo_variables(
                {"KOLO_MPIRUN", "KOLO_CYCLE_TIMES", "HOROVOD_ANYTHING", "PATH", "KOLO_"}),
            (std::vector<std::string>{"KOLO_CYCLE_TIMES", "KOLO_"}));
}

// The table is compiled from base/settings.def, first row to last. RESET_LIMIT (kolo.elastic reads
// KOLO_RESET_LIMIT / HOROVOD_RESET_LIMIT in each worker) was once missing, so a worker given it was
// warned about an unknown variable.
TEST(SettingTableTest, EveryRowOfSettingsDefIsASetting) {
  EXPECT_TRUE(is_setting("CYCLE_TIME"));
  EXPECT_TRUE(is_setting("TEST_SANITIZERS"));
  EXPECT_TRUE(is_setting("RESET_LIMIT"));
  EXPECT_TRUE(unknown_kolo_variables({"KOLO_RESET_LIMIT"}).empty());
}

TEST(SettingTableTest, ReadsTheProcessEnvironment) {
  ASSERT_EQ(::setenv("KOLO_SETTING_TABLE_TEST", "present", 1), 0);
  EXPECT_EQ(process_env_lookup()("KOLO_SETTING_TABLE_TEST"), "present");
  const auto names = process_env_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "KOLO_SETTING_TABLE_TEST"), names.end());
  ::unsetenv("KOLO_SETTING_TABLE_TEST");
  EXPECT_EQ(process_env_lookup()("KOLO_SETTING_TABLE_TEST"), std::nullopt);
}

}  // namespace
}  // namespace kolo
