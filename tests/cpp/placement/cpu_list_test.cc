#include "placement/cpu_list.h"

#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"

namespace kolo::placement {
namespace {

TEST(CpuList, ParsesTheKernelsForm) {
  EXPECT_EQ(parse_cpu_list("3", "X"), (std::vector<int>{3}));
  EXPECT_EQ(parse_cpu_list("0-2,5", "X"), (std::vector<int>{0, 1, 2, 5}));
  EXPECT_EQ(parse_cpu_list("8,1-2,2", "X"), (std::vector<int>{1, 2, 8}));  // sorted, once each
}

TEST(CpuList, FormatsRunsAsRanges) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 5}), "0-2,5");
  EXPECT_EQ(format_cpu_list({4}), "4");
  EXPECT_EQ(format_cpu_list({1, 3, 4}), "1,3-4");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(parse_cpu_list(format_cpu_list({0, 2, 3, 4, 9}), "X"),
            (std::vector<int>{0, 2, 3, 4, 9}));
}

TEST(CpuList, BadTextNamesTheVariableAndTheItem) {
  for (const std::string bad : {"", "a", "1,", "3-1", "-2", "1--2", "0-x"}) {
    try {
      parse_cpu_list(bad, "KOLO_CPU_SHARE");
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("KOLO_CPU_SHARE"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace kolo::placement
