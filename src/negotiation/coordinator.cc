#include "negotiation/coordinator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/errors.h"
#include "negotiation/group_release.h"
#include "negotiation/request_checks.h"

namespace kolo::negotiation {

namespace {

// Collectives whose result depends on every rank's own data or shape: a joined rank has none.
bool needs_every_rank(OpType op) {
  return op == OpType::allgather || op == OpType::broadcast || op == OpType::alltoall ||
         op == OpType::reducescatter || op == OpType::process_set_add ||
         op == OpType::process_set_remove;
}

}  // namespace

Coordinator::Coordinator(int size) : size_(size) {
  if (size < 1)
    throw InvalidArgument(fmt::format("coordinator needs at least one rank, got {}", size));
  joined_.assign(static_cast<size_t>(size), false);
}

void Coordinator::add(const RequestList& list, int from_rank, Clock::time_point now) {
  if (from_rank < 0 || from_rank >= size_) {
    throw ProtocolError(
        fmt::format("request list from rank {} outside the group of {} ranks", from_rank, size_));
  }
  for (const Request& request : list.requests) {
    if (request.rank != from_rank) {
      throw ProtocolError(fmt::format(
          "malformed request list from rank {}: request for tensor '{}' is stamped rank {}",
          from_rank, request.name, request.rank));
    }
  }
  if (list.shutdown && std::find(shutdown_ranks_.begin(), shutdown_ranks_.end(), from_rank) ==
                           shutdown_ranks_.end()) {
    shutdown_ranks_.push_back(from_rank);
  }
  // A name completes only after the whole list is in, so a rank listing the same name twice in
  // one cycle is a duplicate rather than two rounds.
  std::vector<std::string> completed;
  for (const Request& request : list.requests) {
    if (request.op == OpType::join && !joined_[static_cast<size_t>(from_rank)]) {
      joined_[static_cast<size_t>(from_rank)] = true;
      ++joined_count_;
      last_joined_ = from_rank;
    }
    add_request(request, from_rank, now, completed);
  }
  complete_ready(completed);
}

bool Coordinator::ready(const Entry& entry) const {
  for (int r = 0; r < size_; ++r) {
    if (!entry.by_rank[static_cast<size_t>(r)] && !joined_[static_cast<size_t>(r)]) return false;
  }
  return true;
}

bool Coordinator::cannot_run_while_joined(const Entry& entry) const {
  // Its join completes only once every rank joined, so while it lasts an op that needs every
  // rank's data can only fail: fail it now on the ranks that submitted it, instead of waiting
  // for ranks that may never submit this name (their unnamed-op counters differ once a rank
  // skipped a call to join early).
  for (const auto& slot : entry.by_rank) {
    if (slot) return joined_count_ > 0 && needs_every_rank(slot->op);
  }
  return false;
}

void Coordinator::complete_ready(std::vector<std::string>& completed) {
  // A rank joining makes every name the other ranks all submitted ready (first-seen order after
  // the names completed by submission), and fails at once what cannot run while it is joined.
  // The join itself completes last: its response resets the joined state, and the tensors
  // answered before it still see the ranks as joined.
  if (joined_count_ > 0) {
    for (const auto* item : in_first_seen_order()) {
      if ((ready(item->second) || cannot_run_while_joined(item->second)) &&
          std::find(completed.begin(), completed.end(), item->first) == completed.end()) {
        completed.push_back(item->first);
      }
    }
  }
  std::stable_partition(completed.begin(), completed.end(), [&](const std::string& name) {
    const auto& slots = table_.at(name).by_rank;
    return std::none_of(slots.begin(), slots.end(), [](const std::optional<Request>& slot) {
      return slot && slot->op == OpType::join;
    });
  });
  for (const std::string& name : completed) {
    auto it = table_.find(name);
    // The first rank that submitted it (a joined rank has no request for the name).
    const auto& slots = it->second.by_rank;
    const Request& like = **std::find_if(slots.begin(), slots.end(),
                                         [](const std::optional<Request>& slot) { return slot; });
    const int32_t group_id = like.group_id, group_size = like.group_size;
    Response response = complete(name, it->second);
    table_.erase(it);
    release(std::move(response), group_id, group_size);
  }
}

void Coordinator::release(Response response, int32_t group_id, int32_t group_size) {
  if (group_id == 0) {
    ready_.push_back(std::move(response));
    return;
  }
  // All or nothing: no member runs before every member is ready on every rank.
  HeldGroup& group = groups_[group_id];
  if (group.members.empty()) group.expected = group_size;
  group.members.push_back(std::move(response));
  if (static_cast<int32_t>(group.members.size()) < group.expected) return;
  for (Response& merged : merge_group(group_id, std::move(group.members))) {
    ready_.push_back(std::move(merged));
  }
  groups_.erase(group_id);
}

void Coordinator::add_request(const Request& request, int from_rank, Clock::time_point now,
                              std::vector<std::string>& completed) {
  auto [it, inserted] = table_.try_emplace(request.name);
  Entry& entry = it->second;
  if (inserted) {
    entry.by_rank.resize(static_cast<size_t>(size_));
    entry.first_seen = now;
    entry.sequence = next_sequence_++;
  }
  auto& slot = entry.by_rank[static_cast<size_t>(from_rank)];
  if (slot.has_value()) {
    if (std::find(entry.duplicate_ranks.begin(), entry.duplicate_ranks.end(), from_rank) ==
        entry.duplicate_ranks.end()) {
      entry.duplicate_ranks.push_back(from_rank);
    }
    return;
  }
  slot = request;
  if (++entry.submitted == size_) completed.push_back(request.name);
}

Response Coordinator::complete(const std::string& name, Entry& entry) {
  // Joined ranks have no request for the name: the rules apply to the ranks that submitted it.
  std::vector<Request> by_rank;
  by_rank.reserve(entry.by_rank.size());
  for (auto& request : entry.by_rank) {
    if (request) by_rank.push_back(std::move(*request));
  }
  if (!entry.duplicate_ranks.empty()) {
    return make_error_response(
        by_rank[0],
        fmt::format("Duplicate request for tensor '{}' from {}: submitted again before the "
                    "previous request with that name completed",
                    name, describe_ranks(entry.duplicate_ranks)));
  }
  std::vector<std::string> invalid;
  for (const Request& r : by_rank) {
    if (!r.invalid.empty()) invalid.push_back(r.invalid);
  }
  if (!invalid.empty()) {
    return make_error_response(by_rank[0], fmt::format("{}", fmt::join(invalid, "; ")));
  }
  if (joined_count_ > 0 && needs_every_rank(by_rank[0].op)) {
    std::vector<int> joined;
    for (int r = 0; r < size_; ++r) {
      if (joined_[static_cast<size_t>(r)]) joined.push_back(r);
    }
    return make_error_response(
        by_rank[0], fmt::format("{} of tensor '{}' is not supported while ranks have joined ({} "
                                "called join()); as in Horovod, only allreduce and barrier run "
                                "with joined ranks",
                                op_type_name(by_rank[0].op), name, describe_ranks(joined)));
  }
  std::string mismatch = find_mismatch(by_rank);
  if (!mismatch.empty()) return make_error_response(by_rank[0], std::move(mismatch));
  if (by_rank[0].op == OpType::process_set_remove) {
    std::vector<int> busy;
    for (const Request& r : by_rank) {
      if (r.args.size() > 1 && r.args[1] != 0) busy.push_back(r.rank);
    }
    if (!busy.empty()) {
      return make_error_response(
          by_rank[0], fmt::format("process set {} cannot be removed: {} still {} operations "
                                  "pending on it (synchronize them first)",
                                  by_rank[0].args.empty() ? -1 : by_rank[0].args[0],
                                  describe_ranks(busy), busy.size() == 1 ? "has" : "have"));
    }
  }
  Response response = make_response(by_rank);
  if (response.op == OpType::join) {
    response.args = {last_joined_};
    joined_.assign(static_cast<size_t>(size_), false);
    joined_count_ = 0;
    last_joined_ = -1;
  }
  return response;
}

ResponseList Coordinator::take_responses() {
  ResponseList out;
  out.responses = std::move(ready_);
  ready_.clear();
  if (shutdown_ranks_.empty()) return out;

  // Nothing pending can ever complete once a rank stopped: fail it everywhere now rather than
  // leave handles waiting forever.
  out.shutdown = true;
  out.shutdown_ranks.assign(shutdown_ranks_.begin(), shutdown_ranks_.end());
  std::string who = describe_ranks(shutdown_ranks_);
  for (const auto* item : in_first_seen_order()) {
    const auto& [name, entry] = *item;
    std::vector<int> submitted, missing;
    const Request* like = nullptr;
    for (int r = 0; r < size_; ++r) {
      const auto& slot = entry.by_rank[static_cast<size_t>(r)];
      (slot ? submitted : missing).push_back(r);
      if (slot && like == nullptr) like = &*slot;
    }
    out.responses.push_back(make_error_response(
        *like, fmt::format("{} shut down while tensor '{}' was pending: submitted by {}, not by {}",
                           who, name, describe_ranks(submitted), describe_ranks(missing))));
  }
  table_.clear();
  // Members ready on every rank whose group never became whole cannot run either.
  for (auto& [id, group] : groups_) {
    for (Response& member : group.members) {
      member.error = fmt::format(
          "{} shut down while tensor '{}' waited for the rest of its group "
          "({} of {} members ready)",
          who, member.names.at(0), group.members.size(), group.expected);
      out.responses.push_back(std::move(member));
    }
  }
  groups_.clear();
  return out;
}

std::vector<const std::pair<const std::string, Coordinator::Entry>*>
Coordinator::in_first_seen_order() const {
  std::vector<const std::pair<const std::string, Entry>*> items;
  items.reserve(table_.size());
  for (const auto& item : table_) items.push_back(&item);
  std::sort(items.begin(), items.end(),
            [](const auto* a, const auto* b) { return a->second.sequence < b->second.sequence; });
  return items;
}

void Coordinator::cancel(const std::string& name, const std::string& message) {
  auto it = table_.find(name);
  if (it == table_.end()) return;
  for (const auto& slot : it->second.by_rank) {
    if (slot) {
      ready_.push_back(make_error_response(*slot, message));
      break;
    }
  }
  table_.erase(it);
}

std::vector<PendingTensor> Coordinator::pending() const {
  std::vector<PendingTensor> out;
  for (const auto* item : in_first_seen_order()) {
    PendingTensor tensor{item->first, {}, {}, item->second.first_seen};
    for (int r = 0; r < size_; ++r) {
      (item->second.by_rank[static_cast<size_t>(r)] ? tensor.submitted : tensor.missing)
          .push_back(r);
    }
    out.push_back(std::move(tensor));
  }
  return out;
}

}  // namespace kolo::negotiation
