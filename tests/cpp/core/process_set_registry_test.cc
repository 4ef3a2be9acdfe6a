// The registry of process sets: the global set from the start, ids handed out in order and a
// removed set's id handed out again (oldest first, as Horovod), a duplicate rank list refused
// naming the existing id, the global set never removed.
#include "core/process_set_registry.h"

#include <gtest/gtest.h>

#include "base/errors.h"

namespace kolo::core {
namespace {

TEST(ProcessSetRegistryTest, AddsRemovesAndRefusesDuplicates) {
  ProcessSetRegistry registry(3);
  EXPECT_EQ(registry.ranks(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(registry.add({0, 2}), 1);
  EXPECT_EQ(registry.add({1}), 2);
  EXPECT_EQ(registry.ids(), (std::vector<int32_t>{0, 1, 2}));
  try {
    (void)registry.add({0, 2});
    FAIL() << "a second set with the same ranks should be refused";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()), "process set with ranks [0, 2] already exists (id 1)");
  }
  EXPECT_TRUE(registry.remove(1));
  EXPECT_FALSE(registry.remove(1));
  EXPECT_FALSE(registry.remove(0)) << "the global set stays";
  EXPECT_FALSE(registry.find(1).has_value());
  EXPECT_THROW((void)registry.ranks(1), InvalidArgument);
  EXPECT_EQ(registry.add({0, 2}), 1) << "a removed set's id is handed out again";
  EXPECT_EQ(registry.add({2}), 3) << "then new ids";
}

TEST(ProcessSetRegistryTest, HandsOutFreedIdsOldestFirst) {
  ProcessSetRegistry registry(4);
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(registry.add({rank}), rank + 1);
  EXPECT_TRUE(registry.remove(3));
  EXPECT_TRUE(registry.remove(1));
  EXPECT_EQ(registry.add({0, 1}), 3) << "freed first, handed out first";
  EXPECT_EQ(registry.add({1, 2}), 1);
  EXPECT_EQ(registry.add({2, 3}), 5);
  EXPECT_EQ(registry.ids(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(registry.ranks(3), (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace kolo::core
