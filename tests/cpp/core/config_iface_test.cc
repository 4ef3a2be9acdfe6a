#include <gtest/gtest.h>

#include "base/fake_env.h"
#include "core/config.h"

namespace kolo::core {
namespace {

using Names = std::vector<std::string>;

TEST(ConfigInterfaces, UnsetMeansEveryInterface) {
  EXPECT_TRUE(Config::from_env(env_of({}), {}).network_interfaces.empty());
}

TEST(ConfigInterfaces, HorovodGlooIfaceIsHonoured) {
  Config config = Config::from_env(env_of({{"HOROVOD_GLOO_IFACE", "eth1"}}), {});
  EXPECT_EQ(config.network_interfaces, (Names{"eth1"}));
}

TEST(ConfigInterfaces, KoloIfaceWinsAndListsAreSplit) {
  Config config = Config::from_env(
      env_of({{"KOLO_IFACE", "eth0, ib0"}, {"HOROVOD_GLOO_IFACE", "eth1"}}), {"KOLO_IFACE"});
  EXPECT_EQ(config.network_interfaces, (Names{"eth0", "ib0"}));
  EXPECT_TRUE(config.unknown_variables.empty());  // KOLO_IFACE is a known setting
}

}  // namespace
}  // namespace kolo::core
