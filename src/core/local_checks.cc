#include "core/local_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "negotiation/request_checks.h"

namespace kolo::core {

using negotiation::OpType;
using negotiation::UserReduceOp;

LocalProblem find_local_problem(negotiation::Request& request, const std::vector<int>& set_ranks,
                                int job_rank) {
  if (!request.invalid.empty()) return {request.invalid, true};
  const int set_size = static_cast<int>(set_ranks.size());
  if (request.op == OpType::alltoall) {
    std::string problem = negotiation::alltoall_splits_problem(request, set_size);
    if (!problem.empty()) return {std::move(problem), true};
  }
  if (request.op == OpType::reducescatter && request.reduce_op != UserReduceOp::average &&
      request.reduce_op != UserReduceOp::sum) {
    // Horovod aborts the enqueue (a RuntimeError, HorovodInternalError in Python).
    return {
        fmt::format("rank {}: cannot reducescatter tensor '{}' with {}: reducescatter "
                    "supports Average and Sum only",
                    job_rank, request.name, negotiation::user_reduce_op_name(request.reduce_op)),
        false};
  }
  if (request.op == OpType::broadcast && request.process_set != 0) {
    // Horovod names the root by its job rank; the set's communicator numbers members 0..k-1.
    auto root = std::find(set_ranks.begin(), set_ranks.end(), request.root);
    if (root == set_ranks.end()) {
      return {fmt::format("rank {}: broadcast of tensor '{}' names root rank {}, which is not a "
                          "member of process set {} (ranks {})",
                          job_rank, request.name, request.root, request.process_set, set_ranks),
              true};
    }
    request.root = static_cast<int32_t>(root - set_ranks.begin());
  }
  return {};
}

}  // namespace kolo::core
