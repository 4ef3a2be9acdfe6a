#include "fusion/fusion_planner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

namespace kolo::fusion {
namespace {

using negotiation::OpType;
using negotiation::Response;

Response allreduce(std::string name) {
  Response r;
  r.op = OpType::allreduce;
  r.names = {std::move(name)};
  r.dtype = DataType::float32;
  return r;
}

struct Planner {
  std::map<std::string, size_t> bytes;
  std::vector<std::string> asked;

  std::vector<FusedGroup> plan(const std::vector<Response>& responses, size_t threshold) {
    return plan_fusion(
        responses,
        [this](const std::string& name) {
          asked.push_back(name);
          return bytes.at(name);
        },
        threshold);
  }
};

std::vector<std::vector<std::string>> names_of(const std::vector<FusedGroup>& groups) {
  std::vector<std::vector<std::string>> out;
  for (const auto& g : groups) out.push_back(g.response.names);
  return out;
}

using Names = std::vector<std::vector<std::string>>;

TEST(FusionPlannerTest, LargeCudaTensorsOnTheHostPathRunAloneSmallOnesFuse) {
  const size_t mib = size_t{1} << 20;
  Planner p{{{"bn.w", 1024}, {"bn.b", 1024}, {"conv", 2 * mib}, {"bias", 512}, {"fc", mib}}, {}};
  std::vector<Response> responses;
  for (const char* name : {"bn.w", "bn.b", "conv", "bias", "fc"}) {
    responses.push_back(allreduce(name));
    responses.back().device = negotiation::DeviceKind::cuda_through_host;
  }
  // conv (over 1 MiB) alone, in place in its pinned host copy; fc (exactly 1 MiB) still fuses.
  EXPECT_EQ(names_of(p.plan(responses, 64 * mib)),
            (Names{{"bn.w", "bn.b"}, {"conv"}, {"bias", "fc"}}));
  // The same sizes on the CPU fuse into one buffer, as before.
  for (Response& r : responses) r.device = negotiation::DeviceKind::cpu;
  EXPECT_EQ(names_of(p.plan(responses, 64 * mib)), (Names{{"bn.w", "bn.b", "conv", "bias", "fc"}}));
}

TEST(FusionPlannerTest, FusesConsecutiveCompatibleAllreduces) {
  Planner p{{{"a", 100}, {"b", 64}, {"c", 1}}, {}};
  auto groups = p.plan({allreduce("a"), allreduce("b"), allreduce("c")}, 1024);
  ASSERT_EQ(names_of(groups), (Names{{"a", "b", "c"}}));
  const FusedGroup& g = groups[0];
  EXPECT_TRUE(g.fused());
  ASSERT_EQ(g.tensors.size(), 3u);
  EXPECT_EQ(g.tensors[0].offset, 0u);
  EXPECT_EQ(g.tensors[1].offset, 128u);  // 100 rounded up to 64
  EXPECT_EQ(g.tensors[2].offset, 192u);  // 128 + 64 already aligned
  EXPECT_EQ(g.tensors[2].bytes, 1u);
  EXPECT_EQ(g.buffer_bytes, 193u);
  EXPECT_EQ(g.response.op, OpType::allreduce);
  EXPECT_EQ(p.asked, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(FusionPlannerTest, EveryOffsetIsAligned) {
  Planner p;
  std::vector<Response> responses;
  for (int i = 0; i < 50; ++i) {
    std::string name = fmt::format("t{}", i);
    p.bytes[name] = static_cast<size_t>(i * 37 % 200);
    responses.push_back(allreduce(name));
  }
  auto groups = p.plan(responses, 1000);
  size_t total = 0;
  for (const auto& g : groups) {
    EXPECT_LE(g.buffer_bytes, 1000u);
    size_t end = 0;
    for (const auto& t : g.tensors) {
      EXPECT_EQ(t.offset % kFusionAlignment, 0u) << t.name;
      EXPECT_GE(t.offset, end) << t.name;  // no overlap
      end = t.offset + t.bytes;
      ++total;
    }
    EXPECT_EQ(g.buffer_bytes, end);
  }
  EXPECT_EQ(total, 50u);
}

TEST(FusionPlannerTest, IncompatibleNeighboursBreakGroups) {
  Planner p{{{"a", 8},
             {"b", 8},
             {"c", 8},
             {"d", 8},
             {"e", 8},
             {"f", 8},
             {"g", 8},
             {"h", 8},
             {"i", 8},
             {"j", 8}},
            {}};
  Response b = allreduce("b");
  b.dtype = DataType::float16;
  Response c = allreduce("c");
  c.dtype = DataType::float16;
  Response d = allreduce("d");
  d.dtype = DataType::float16;
  d.reduce_op = negotiation::UserReduceOp::max;
  Response e = allreduce("e");
  e.postscale = 0.5;
  Response f = allreduce("f");
  f.prescale = 2.0;
  Response g = allreduce("g");
  g.device = negotiation::DeviceKind::cuda;
  Response h = allreduce("h");
  h.process_set = 1;
  Response bcast = allreduce("bc");
  bcast.op = OpType::broadcast;
  Response failed = allreduce("bad");
  failed.error = "Mismatched shape";
  auto groups =
      p.plan({allreduce("a"), b, c, d, e, f, g, h, bcast, failed, allreduce("i"), allreduce("j")},
             1 << 20);
  EXPECT_EQ(
      names_of(groups),
      (Names{{"a"}, {"b", "c"}, {"d"}, {"e"}, {"f"}, {"g"}, {"h"}, {"bc"}, {"bad"}, {"i", "j"}}));
  // Non-allreduce and failed responses do not use the buffer; sizes are not asked for them.
  EXPECT_TRUE(groups[7].tensors.empty());
  EXPECT_EQ(groups[7].buffer_bytes, 0u);
  EXPECT_TRUE(groups[8].tensors.empty());
  EXPECT_EQ(groups[8].response.error, "Mismatched shape");
  EXPECT_EQ(std::count(p.asked.begin(), p.asked.end(), "bc"), 0);
  EXPECT_EQ(std::count(p.asked.begin(), p.asked.end(), "bad"), 0);
}

TEST(FusionPlannerTest, ThresholdClosesGroups) {
  Planner p{{{"a", 60}, {"b", 60}, {"c", 60}, {"d", 1}}, {}};
  // a at 0, b at 64 (ends 124), c would end at 188 > 150.
  auto groups = p.plan({allreduce("a"), allreduce("b"), allreduce("c"), allreduce("d")}, 150);
  EXPECT_EQ(names_of(groups), (Names{{"a", "b"}, {"c", "d"}}));
  EXPECT_EQ(groups[0].buffer_bytes, 124u);
  // Padding counts against the threshold: with 124 the second tensor no longer fits.
  groups = p.plan({allreduce("a"), allreduce("b")}, 123);
  EXPECT_EQ(names_of(groups), (Names{{"a"}, {"b"}}));
}

TEST(FusionPlannerTest, ThresholdZeroDisablesFusion) {
  Planner p{{{"a", 4}, {"b", 4}, {"c", 0}}, {}};
  auto groups = p.plan({allreduce("a"), allreduce("b"), allreduce("c")}, 0);
  EXPECT_EQ(names_of(groups), (Names{{"a"}, {"b"}, {"c"}}));
  for (const auto& g : groups) {
    EXPECT_FALSE(g.fused());
    ASSERT_EQ(g.tensors.size(), 1u);
    EXPECT_EQ(g.tensors[0].offset, 0u);
  }
}

TEST(FusionPlannerTest, TensorLargerThanThresholdGoesAlone) {
  Planner p{{{"a", 10}, {"big", 5000}, {"b", 10}, {"c", 10}}, {}};
  auto groups = p.plan({allreduce("a"), allreduce("big"), allreduce("b"), allreduce("c")}, 1024);
  EXPECT_EQ(names_of(groups), (Names{{"a"}, {"big"}, {"b", "c"}}));
  EXPECT_EQ(groups[1].buffer_bytes, 5000u);
}

TEST(FusionPlannerTest, EmptyInput) {
  Planner p;
  EXPECT_TRUE(p.plan({}, 1024).empty());
}

}  // namespace
}  // namespace kolo::fusion
