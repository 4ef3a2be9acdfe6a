// merge_group: how a group's members leave the coordinator.
#include "negotiation/group_release.h"

#include <gtest/gtest.h>

namespace kolo::negotiation {
namespace {

Response member(const std::string& name, DeviceKind device, DataType dtype = DataType::float32) {
  Response r;
  r.op = OpType::allreduce;
  r.names = {name};
  r.dtype = dtype;
  r.device = device;
  return r;
}

TEST(MergeGroup, MembersThatAgreeShareOneResponse) {
  auto merged = merge_group(3, {member("g.0", DeviceKind::cpu), member("g.1", DeviceKind::cpu),
                                member("g.2", DeviceKind::cpu, DataType::float16)});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].names, (std::vector<std::string>{"g.0", "g.1"}));
  EXPECT_EQ(merged[1].names, (std::vector<std::string>{"g.2"}));
}

TEST(MergeGroup, CpuAndCudaTensorsInOneGroupFailEveryMember) {
  // Horovod's test_horovod_grouped_allreduce_cpu_gpu_error: a CUDA tensor beside a CPU one.
  auto merged = merge_group(7, {member("g.0", DeviceKind::cuda), member("g.1", DeviceKind::cpu),
                                member("g.2", DeviceKind::cuda)});
  ASSERT_EQ(merged.size(), 3u);
  for (const Response& r : merged) {
    EXPECT_EQ(r.error,
              "Mismatched device in group 7: tensor 'g.0' is a CUDA tensor and tensor 'g.1' a CPU "
              "one; the tensors of a grouped operation must all be on the CPU or all on the GPU");
  }
}

TEST(MergeGroup, CudaTensorsOnNcclAndThroughHostMemoryMayMix) {
  // An int16 tensor (no NCCL type) goes through host memory beside its group's NCCL members.
  auto merged = merge_group(2, {member("g.0", DeviceKind::cuda),
                                member("g.1", DeviceKind::cuda_through_host, DataType::int16)});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_TRUE(merged[0].error.empty());
  EXPECT_TRUE(merged[1].error.empty());
}

}  // namespace
}  // namespace kolo::negotiation
