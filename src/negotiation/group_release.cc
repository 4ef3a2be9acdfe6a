#include "negotiation/group_release.h"

#include <fmt/format.h>

#include <algorithm>

namespace kolo::negotiation {

namespace {

bool same_collective(const Response& a, const Response& b) {
  return a.op == b.op && a.reduce_op == b.reduce_op && a.dtype == b.dtype && a.root == b.root &&
         a.prescale == b.prescale && a.postscale == b.postscale && a.process_set == b.process_set &&
         a.device == b.device;
}

bool on_cpu(const Response& r) { return r.device == DeviceKind::cpu; }

// A group mixing CPU and CUDA tensors (Horovod refuses it): the first member on the other side
// of the first member's, or none. CUDA tensors on NCCL and through host memory may mix.
const Response* mixed_device(const std::vector<Response>& members) {
  for (const Response& member : members) {
    if (on_cpu(member) != on_cpu(members.front())) return &member;
  }
  return nullptr;
}

void append(std::vector<int64_t>& to, const std::vector<int64_t>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

std::vector<Response> merge_group(int32_t group_id, std::vector<Response> members) {
  auto failed = std::find_if(members.begin(), members.end(),
                             [](const Response& r) { return !r.error.empty(); });
  if (failed != members.end()) {
    const std::string cause = failed->error;
    const std::string culprit = failed->names.at(0);
    for (Response& member : members) {
      if (member.error.empty()) {
        member.error =
            fmt::format("Tensor '{}' was not run: tensor '{}' of the same group ({}) failed: {}",
                        member.names.at(0), culprit, group_id, cause);
      }
    }
    return members;
  }
  if (const Response* other = members.empty() ? nullptr : mixed_device(members)) {
    const std::string error = fmt::format(
        "Mismatched device in group {}: tensor '{}' is a {} tensor and tensor '{}' a {} one; the "
        "tensors of a grouped operation must all be on the CPU or all on the GPU",
        group_id, members.front().names.at(0), on_cpu(members.front()) ? "CPU" : "CUDA",
        other->names.at(0), on_cpu(*other) ? "CPU" : "CUDA");
    for (Response& member : members) member.error = error;
    return members;
  }
  std::vector<Response> merged;
  for (Response& member : members) {
    auto into = std::find_if(merged.begin(), merged.end(),
                             [&](const Response& r) { return same_collective(r, member); });
    if (into == merged.end()) {
      merged.push_back(std::move(member));
      continue;
    }
    into->names.push_back(member.names.at(0));
    append(into->first_dims, member.first_dims);
    append(into->splits, member.splits);
  }
  return merged;
}

}  // namespace kolo::negotiation
