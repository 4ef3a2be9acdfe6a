#include "negotiation/request_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <optional>

namespace kolo::negotiation {

namespace {

std::string_view device_name(DeviceKind device) {
  switch (device) {
    case DeviceKind::cuda:
      return "cuda";
    case DeviceKind::cuda_through_host:
      return "cuda (through host memory)";
    case DeviceKind::cpu:
      break;
  }
  return "cpu";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// The shape with its first dimension shown as '*': what allgather and alltoall compare.
std::string trailing_shape_text(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "[]";
  std::vector<std::string> dims{"*"};
  for (size_t i = 1; i < shape.size(); ++i) dims.push_back(std::to_string(shape[i]));
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

bool has_shape_dtype(OpType op) { return op != OpType::barrier && op != OpType::join; }
bool has_reduction(OpType op) { return op == OpType::allreduce || op == OpType::reducescatter; }
bool varies_first_dim(OpType op) { return op == OpType::allgather || op == OpType::alltoall; }

// When the ranks disagree on `value`, the message grouping the ranks by what they submitted,
// groups ordered by their lowest rank.
std::optional<std::string> disagreement(const std::vector<Request>& by_rank, std::string_view field,
                                        const std::function<std::string(const Request&)>& value) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    std::string v = value(by_rank[r]);
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == v; });
    if (it == groups.end()) {
      groups.emplace_back(std::move(v), std::vector<int>{by_rank[r].rank});
    } else {
      it->second.push_back(by_rank[r].rank);
    }
  }
  if (groups.size() <= 1) return std::nullopt;
  std::vector<std::string> parts;
  for (const auto& [v, ranks] : groups) {
    parts.push_back(fmt::format("{} submitted {}", describe_ranks(ranks), v));
  }
  return fmt::format("Mismatched {} for tensor '{}': {}", field, by_rank[0].name,
                     fmt::join(parts, ", "));
}

}  // namespace

std::string describe_ranks(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  if (ranks.empty()) return "no rank";
  if (ranks.size() == 1) return fmt::format("rank {}", ranks[0]);
  if (ranks.size() == 2) return fmt::format("rank {} and rank {}", ranks[0], ranks[1]);
  std::vector<std::string> items;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (j - i >= 2) {
      items.push_back(fmt::format("{}-{}", ranks[i], ranks[j]));
    } else {
      for (size_t k = i; k <= j; ++k) items.push_back(std::to_string(ranks[k]));
    }
    i = j + 1;
  }
  if (items.size() == 1) return "ranks " + items[0];
  std::string last = items.back();
  items.pop_back();
  return fmt::format("ranks {} and {}", fmt::join(items, ", "), last);
}

std::string find_mismatch(const std::vector<Request>& by_rank) {
  using Check = std::pair<std::string_view, std::function<std::string(const Request&)>>;
  // Order matters: once the op differs, nothing else is comparable.
  std::vector<Check> checks = {
      {"op", [](const Request& r) { return std::string(op_type_name(r.op)); }},
      {"process set", [](const Request& r) { return std::to_string(r.process_set); }},
      {"device", [](const Request& r) { return std::string(device_name(r.device)); }},
      {"group",
       [](const Request& r) {
         return r.group_id == 0 ? std::string("no group")
                                : fmt::format("group {} of {}", r.group_id, r.group_size);
       }},
  };
  OpType op = by_rank[0].op;
  if (has_shape_dtype(op)) {
    checks.push_back({"dtype", [](const Request& r) { return std::string(dtype_name(r.dtype)); }});
  }
  if (op == OpType::allreduce || op == OpType::reducescatter || op == OpType::broadcast) {
    checks.push_back({"shape", [](const Request& r) { return shape_text(r.shape); }});
  }
  if (op == OpType::process_set_add) {
    checks.push_back({"process set ranks", [](const Request& r) { return shape_text(r.args); }});
  }
  if (op == OpType::process_set_remove) {
    // args[1] is each rank's own busy flag, which may differ; only the id must agree.
    checks.push_back({"process set id", [](const Request& r) {
                        return r.args.empty() ? std::string("none") : std::to_string(r.args[0]);
                      }});
  }
  if (varies_first_dim(op)) {
    checks.push_back(
        {"number of dimensions", [](const Request& r) { return std::to_string(r.shape.size()); }});
    checks.push_back({"shape (all dimensions but the first)",
                      [](const Request& r) { return trailing_shape_text(r.shape); }});
  }
  if (has_reduction(op)) {
    checks.push_back({"reduce op", [](const Request& r) {
                        return std::string(user_reduce_op_name(r.reduce_op));
                      }});
    checks.push_back(
        {"prescale factor", [](const Request& r) { return fmt::format("{}", r.prescale); }});
    checks.push_back(
        {"postscale factor", [](const Request& r) { return fmt::format("{}", r.postscale); }});
  }
  if (op == OpType::broadcast) {
    checks.push_back({"root rank", [](const Request& r) { return std::to_string(r.root); }});
  }
  for (const auto& [field, value] : checks) {
    if (auto message = disagreement(by_rank, field, value)) return *message;
  }

  const Request& first = by_rank[0];
  int size = static_cast<int>(by_rank.size());
  if (op == OpType::broadcast && (first.root < 0 || first.root >= size)) {
    return fmt::format("Invalid root rank {} for broadcast of tensor '{}': the group has {} ranks",
                       first.root, first.name, size);
  }
  if ((varies_first_dim(op) || op == OpType::reducescatter) && first.shape.empty()) {
    return fmt::format("Cannot {} tensor '{}': it has no dimensions (a scalar)", op_type_name(op),
                       first.name);
  }
  if (op == OpType::reducescatter && first.reduce_op == UserReduceOp::adasum) {
    return fmt::format("Cannot reducescatter tensor '{}' with Adasum: use Average or Sum",
                       first.name);
  }
  if (op == OpType::alltoall) {
    for (const Request& r : by_rank) {
      std::string problem = alltoall_splits_problem(r, size);
      if (!problem.empty()) return problem;
    }
  }
  return {};
}

std::string alltoall_splits_problem(const Request& request, int size) {
  const int64_t rows = request.shape.empty() ? 0 : request.shape[0];
  if (request.splits.empty()) {
    if (rows % size == 0) return {};
    return fmt::format(
        "Cannot alltoall tensor '{}' on rank {}: without splits its first dimension ({}) must "
        "divide evenly among the {} ranks",
        request.name, request.rank, rows, size);
  }
  if (request.splits.size() != static_cast<size_t>(size)) {
    return fmt::format(
        "Invalid splits for alltoall of tensor '{}' on rank {}: {} has {} entries, "
        "expected one per rank ({})",
        request.name, request.rank, shape_text(request.splits), request.splits.size(), size);
  }
  int64_t total = 0;
  for (int64_t split : request.splits) total += split;
  if (total != rows) {
    return fmt::format(
        "Invalid splits for alltoall of tensor '{}' on rank {}: {} sums to {}, but "
        "the tensor's first dimension is {}",
        request.name, request.rank, shape_text(request.splits), total, rows);
  }
  return {};
}

std::vector<int64_t> alltoall_send_rows(const Request& request, int size) {
  if (!request.splits.empty()) return request.splits;
  const int64_t rows = request.shape.empty() ? 0 : request.shape[0];
  return std::vector<int64_t>(static_cast<size_t>(size), rows / size);
}

int64_t reducescatter_rows(int64_t rows, int size, int rank) {
  return rows / size + (rank < rows % size ? 1 : 0);
}

namespace {
// The fields every response for `like`'s tensor carries, successful or not.
Response response_for(const Request& like) {
  Response response;
  response.op = like.op;
  response.names = {like.name};
  response.reduce_op = like.reduce_op;
  response.dtype = like.dtype;
  response.root = like.root;
  response.process_set = like.process_set;
  response.device = like.device;
  response.group_id = like.group_id;
  return response;
}
}  // namespace

Response make_response(const std::vector<Request>& by_rank) {
  const Request& first = by_rank[0];
  Response response = response_for(first);
  response.prescale = first.prescale;
  response.postscale = first.postscale;
  if (first.op == OpType::allreduce || first.op == OpType::barrier) response.shape = first.shape;
  if (first.op == OpType::process_set_add) response.args = first.args;
  if (first.op == OpType::process_set_remove && !first.args.empty()) {
    response.args = {first.args[0]};
  }
  if (first.op == OpType::allgather) {
    for (const Request& r : by_rank) response.first_dims.push_back(r.shape.at(0));
  }
  if (first.op == OpType::alltoall) {
    const int size = static_cast<int>(by_rank.size());
    for (const Request& r : by_rank) {
      for (int64_t rows : alltoall_send_rows(r, size)) response.splits.push_back(rows);
    }
  }
  return response;
}

Response make_error_response(const Request& like, std::string error) {
  Response response = response_for(like);
  response.error = std::move(error);
  return response;
}

}  // namespace kolo::negotiation
