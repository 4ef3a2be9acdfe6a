#include "core/stall_inspector.h"

#include <gtest/gtest.h>

namespace kolo::core {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

negotiation::PendingTensor pending(std::string name, std::vector<int> submitted,
                                   std::vector<int> missing, Clock::time_point first_seen) {
  return {std::move(name), std::move(submitted), std::move(missing), first_seen};
}

TEST(StallMessage, HorovodWordingWithMissingRanksAndTheirTensors) {
  std::string message = stall_message(seconds(60), {{1, {"a", "b"}}, {3, {"b"}}});
  EXPECT_EQ(message.rfind("One or more tensors were submitted to be reduced, gathered or "
                          "broadcasted by subset of ranks and are waiting for remainder of ranks "
                          "for more than 60 seconds.",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("\nMissing ranks:\n1: [a, b]\n3: [b]"), std::string::npos) << message;
}

TEST(StallMessage, LongListsAreSummarised) {
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) names.push_back("t" + std::to_string(i));
  std::string message = stall_message(milliseconds(1500), {{2, names}});
  EXPECT_NE(message.find("more than 1.5 seconds"), std::string::npos) << message;
  EXPECT_NE(message.find("t31, ... and 8 more]"), std::string::npos) << message;
  EXPECT_EQ(message.find("t32"), std::string::npos) << message;
}

TEST(StallInspector, WarnsOnlyAfterTheWarningTimeAndThenAtMostOncePerPeriod) {
  StallInspector inspector({seconds(10), milliseconds(0)});
  const Clock::time_point t0{};
  std::vector<negotiation::PendingTensor> table = {pending("late", {0, 2}, {1}, t0),
                                                   pending("fresh", {0}, {1, 2}, t0 + seconds(8))};
  EXPECT_TRUE(inspector.inspect(table, t0 + seconds(9)).warning.empty());

  StallReport first = inspector.inspect(table, t0 + seconds(10));
  EXPECT_NE(first.warning.find("Missing ranks:\n1: [late]"), std::string::npos) << first.warning;
  EXPECT_EQ(first.warning.find("fresh"), std::string::npos) << first.warning;
  EXPECT_TRUE(first.cancel.empty());

  EXPECT_TRUE(inspector.inspect(table, t0 + seconds(15)).warning.empty());
  // Tensors are listed in the coordinator's (first-seen) order.
  StallReport again = inspector.inspect(table, t0 + seconds(20));
  EXPECT_NE(again.warning.find("1: [late, fresh]"), std::string::npos) << again.warning;
  EXPECT_NE(again.warning.find("2: [fresh]"), std::string::npos) << again.warning;
}

TEST(StallInspector, CancelsPastTheShutdownTimeWithAMessageNamingTensorAndRanks) {
  StallInspector inspector({seconds(1), seconds(3)});
  const Clock::time_point t0{};
  std::vector<negotiation::PendingTensor> table = {pending("x", {0}, {1, 2}, t0),
                                                   pending("y", {0, 1}, {2}, t0 + seconds(2))};
  EXPECT_TRUE(inspector.inspect(table, t0 + milliseconds(2999)).cancel.empty());
  StallReport report = inspector.inspect(table, t0 + seconds(3));
  ASSERT_EQ(report.cancel.size(), 1u);
  EXPECT_EQ(report.cancel[0].first, "x");
  const std::string& message = report.cancel[0].second;
  EXPECT_NE(message.find("Missing ranks:\n1: [x]\n2: [x]"), std::string::npos) << message;
  EXPECT_NE(message.find("tensor 'x' waited more than 3 seconds"), std::string::npos) << message;
  EXPECT_NE(message.find("for ranks [1, 2]"), std::string::npos) << message;
  EXPECT_EQ(message.find("[y]"), std::string::npos) << message;
}

TEST(StallInspector, ShutdownTimeBelowTheWarningTimeStillCancels) {
  StallInspector inspector({seconds(60), seconds(2)});
  StallReport report = inspector.inspect({pending("z", {1}, {0}, Clock::time_point{})},
                                         Clock::time_point{} + seconds(2));
  EXPECT_TRUE(report.warning.empty());
  ASSERT_EQ(report.cancel.size(), 1u);
  EXPECT_NE(report.cancel[0].second.find("0: [z]"), std::string::npos);
}

TEST(StallInspector, InspectsAFewTimesPerPeriod) {
  StallInspector inspector({seconds(1), milliseconds(0)});
  const Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(inspector.due(t0));
  (void)inspector.inspect({}, t0);
  EXPECT_FALSE(inspector.due(t0 + milliseconds(50)));
  EXPECT_TRUE(inspector.due(t0 + milliseconds(100)));
}

}  // namespace
}  // namespace kolo::core
