// Fusion planning: consecutive compatible allreduce responses are merged into one Response that
// runs on a single fusion buffer, so many small gradients cost one collective. Every rank plans
// from the identical response list and identical sizes, so every rank builds the same groups.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "negotiation/message.h"

namespace kolo::fusion {

inline constexpr size_t kFusionAlignment = 64;

// Where one tensor of a group lives in the fusion buffer.
struct FusedTensor {
  std::string name;
  size_t offset = 0;  // multiple of kFusionAlignment
  size_t bytes = 0;
};

struct FusedGroup {
  // The member responses as one: names in order, the shared op parameters.
  negotiation::Response response;
  // Allreduce responses without error: one entry per name (a lone tensor too, offset 0). Other
  // ops and error responses: empty, they do not use the fusion buffer.
  std::vector<FusedTensor> tensors;
  // Fusion buffer bytes the group needs: end of its last tensor (0 without tensors).
  size_t buffer_bytes = 0;

  [[nodiscard]] bool fused() const { return tensors.size() > 1; }
};

// Size in bytes of the named tensor on this rank (core knows it from the queued entry).
using TensorBytes = std::function<size_t(const std::string& name)>;

// Groups `responses` (in order, never reordered) so that each group's buffer_bytes, padding
// included, is at most threshold_bytes. Responses fuse when both are error-free allreduces of a
// single name each with equal reduce op, dtype, prescale, postscale, process set and device.
// threshold_bytes == 0 disables fusion; a tensor larger than the threshold stays alone, and so does
// a CUDA tensor on the host path (DeviceKind::cuda_through_host) larger than 1 MiB.
// tensor_bytes is called once per allreduce name.
[[nodiscard]] std::vector<FusedGroup> plan_fusion(std::span<const negotiation::Response> responses,
                                                  const TensorBytes& tensor_bytes,
                                                  size_t threshold_bytes);

// offset rounded up to the fusion alignment.
[[nodiscard]] constexpr size_t align_fusion_offset(size_t offset) {
  return (offset + kFusionAlignment - 1) / kFusionAlignment * kFusionAlignment;
}

}  // namespace kolo::fusion
