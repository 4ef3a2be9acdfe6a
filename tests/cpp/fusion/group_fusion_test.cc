// Fusion of groups released whole (one response, several names) and of Adasum (never fused).
#include <gtest/gtest.h>

#include "fusion/fusion_planner.h"

namespace kolo::fusion {
namespace {

using negotiation::OpType;
using negotiation::Response;
using negotiation::UserReduceOp;

Response allreduce(std::vector<std::string> names, UserReduceOp op = UserReduceOp::sum) {
  Response r;
  r.op = OpType::allreduce;
  r.names = std::move(names);
  r.reduce_op = op;
  return r;
}

TEST(GroupFusionTest, WholeGroupIsOneUnitWhateverTheThreshold) {
  std::vector<Response> responses = {allreduce({"before"}), allreduce({"g.0", "g.1", "g.2"}),
                                     allreduce({"after"})};
  auto bytes = [](const std::string&) { return size_t{100}; };
  auto groups = plan_fusion(responses, bytes, /*threshold_bytes=*/150);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[1].response.names, (std::vector<std::string>{"g.0", "g.1", "g.2"}));
  ASSERT_EQ(groups[1].tensors.size(), 3u);
  EXPECT_EQ(groups[1].tensors[1].offset, 128u);
  EXPECT_EQ(groups[1].tensors[2].offset, 256u);
  EXPECT_EQ(groups[1].buffer_bytes, 356u);
  EXPECT_EQ(groups[2].response.names, std::vector<std::string>{"after"});
}

TEST(GroupFusionTest, AdasumIsNeverFused) {
  std::vector<Response> responses = {allreduce({"a"}, UserReduceOp::adasum),
                                     allreduce({"b"}, UserReduceOp::adasum),
                                     allreduce({"c", "d"}, UserReduceOp::adasum)};
  auto groups = plan_fusion(
      responses, [](const std::string&) { return size_t{8}; }, 1 << 20);
  ASSERT_EQ(groups.size(), 3u);
  for (const auto& group : groups) EXPECT_TRUE(group.tensors.empty());
}

}  // namespace
}  // namespace kolo::fusion
