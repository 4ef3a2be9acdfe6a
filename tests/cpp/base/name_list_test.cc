#include "base/name_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kolo {
namespace {

using Names = std::vector<std::string>;

TEST(NameList, TrimsAndDropsEmptyAndRepeatedNames) {
  EXPECT_EQ(parse_name_list("eth0,eth1"), (Names{"eth0", "eth1"}));
  EXPECT_EQ(parse_name_list(" eth0 , ,eth1,eth0,"), (Names{"eth0", "eth1"}));
  EXPECT_TRUE(parse_name_list("").empty());
}

}  // namespace
}  // namespace kolo
