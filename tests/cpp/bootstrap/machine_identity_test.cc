#include "bootstrap/machine_identity.h"

#include <gtest/gtest.h>

#include <map>

namespace kolo::bootstrap {
namespace {

EnvLookup env(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(MachineIdentity, IsTheBootAndNamespacesOfThisProcessUnlessSet) {
  const std::string here = machine_identity(env({}));
  ASSERT_FALSE(here.empty());  // Linux with /proc
  EXPECT_NE(here.find("net:["), std::string::npos) << here;
  EXPECT_NE(here.find("mnt:["), std::string::npos) << here;
  EXPECT_EQ(machine_identity(env({})), here);
  EXPECT_EQ(machine_identity(env({{"KOLO_MACHINE_ID", "rack4"}})), "rack4");
  EXPECT_EQ(machine_identity(env({{"HOROVOD_MACHINE_ID", "rack5"}})), "rack5");
}

TEST(MachineIdentity, HostRecordsRoundTripAndAnOldPeersNameReadsAsUnknownMachine) {
  const HostRecord record{"node1", "boot/net:[1]/mnt:[2]"};
  EXPECT_EQ(host_record_text(record), "node1\tboot/net:[1]/mnt:[2]");
  const HostRecord back = parse_host_record(host_record_text(record));
  EXPECT_EQ(back.hostname, "node1");
  EXPECT_EQ(back.machine, "boot/net:[1]/mnt:[2]");
  const HostRecord old = parse_host_record("node2");
  EXPECT_EQ(old.hostname, "node2");
  EXPECT_TRUE(old.machine.empty());
  EXPECT_EQ(host_record_text({"node3", ""}), "node3");
}

TEST(MachineIdentity, GroupsJoinSameNamesAndSameMachinesTransitively) {
  // 0 and 1: two names of one machine; 2: a second machine named like 1 (joined through the
  // name); 3: alone; 4 and 5: unknown machines, apart unless their names match.
  const std::vector<HostRecord> records{{"localhost", "m1"}, {"127.0.0.1", "m1"},
                                        {"127.0.0.1", "m2"}, {"other", "m3"},
                                        {"old", ""},         {"old2", ""}};
  const std::vector<int> groups = memory_groups(records);
  EXPECT_EQ(groups, (std::vector<int>{0, 0, 0, 3, 4, 5}));
  EXPECT_EQ(memory_groups({{"a", ""}, {"a", ""}, {"b", ""}}), (std::vector<int>{0, 0, 2}));
  EXPECT_EQ(memory_groups({{"a", "x"}, {"b", "y"}, {"c", "x"}, {"d", "y"}}),
            (std::vector<int>{0, 1, 0, 1}));
}

}  // namespace
}  // namespace kolo::bootstrap
