// The Session's process-set and join requests: the control operations that hvd.add_process_set(),
// remove_process_set() and join() submit on the global set, and what every rank does when they
// are agreed (in the same cycle everywhere). The cycle loop itself is in session.cc and
// session_loop.cc.
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "base/errors.h"
#include "core/session.h"

namespace kolo::core {

HandleId Session::enqueue_control(negotiation::OpType op, std::string_view kind,
                                  std::vector<int64_t> args) {
  TensorEntry entry;
  {
    // Every rank makes the same calls in the same order, so the names agree.
    std::lock_guard lock(mutex_);
    entry.request.name = fmt::format("kolo.{}.{}", kind, control_calls_++);
  }
  entry.request.op = op;
  entry.request.dtype = DataType::int64;
  entry.request.args = std::move(args);
  entry.request.process_set = kGlobalProcessSet;
  // No data: the executor never sees these (apply_control answers them).
  return enqueue(std::move(entry));
}

HandleId Session::request_add_process_set(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  if (ranks.empty()) throw InvalidArgument("a process set needs at least one rank");
  if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) {
    throw InvalidArgument(fmt::format("process set ranks {} list a rank twice", ranks));
  }
  if (ranks.front() < 0 || ranks.back() >= world_.size) {
    throw InvalidArgument(
        fmt::format("process set ranks {} are not all in 0..{} (the job has {} "
                    "ranks)",
                    ranks, world_.size - 1, world_.size));
  }
  return enqueue_control(negotiation::OpType::process_set_add, "add_process_set",
                         {ranks.begin(), ranks.end()});
}

HandleId Session::request_remove_process_set(int32_t id) {
  int32_t busy = 0;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [set_id, tensor] : names_in_flight_) {
      if (set_id == id) busy = 1;
    }
  }
  // `busy` goes along as the second argument: the coordinator refuses the removal on every rank
  // when any member still has operations pending on the set.
  return enqueue_control(negotiation::OpType::process_set_remove, "remove_process_set", {id, busy});
}

HandleId Session::request_join(int device) {
  if (device < -1) {
    throw InvalidArgument(
        fmt::format("rank {}: join(device={}): the device is a CUDA device index, or -1 for none",
                    world_.rank, device));
  }
  // Stays off the wire: the coordinator compares the join requests' args across ranks, and ranks
  // may name different devices. Stored before the enqueue, which orders it for the cycles.
  join_device_.store(device);
  return enqueue_control(negotiation::OpType::join, "join", {});
}

std::vector<int> Session::process_set_ranks(int32_t id) const { return registry_->ranks(id); }

std::vector<int32_t> Session::process_set_ids() const { return registry_->ids(); }

void Session::apply_control(ProcessSet& set, const negotiation::Response& response) {
  using negotiation::OpType;
  for (const std::string& name : response.names) {
    auto it = set.pending().find(name);
    if (it == set.pending().end()) continue;  // a joined rank's share of a join it never sent
    const HandleId handle = it->second.handle;
    set.pending().erase(it);
    if (!response.error.empty()) {
      handles_.fail(handle, response.error);
      continue;
    }
    int64_t result = 0;
    try {
      if (response.args.empty() && response.op != OpType::process_set_add) {
        throw InvalidArgument(fmt::format("the agreed {} '{}' carries no arguments",
                                          negotiation::op_type_name(response.op), name));
      }
      if (response.op == OpType::join) result = response.args[0];
      if (response.op == OpType::process_set_add) result = add_set(response.args);
      if (response.op == OpType::process_set_remove) {
        result = remove_set(static_cast<int32_t>(response.args[0]));
      }
    } catch (const InvalidArgument& error) {
      // Decided from agreed state, so every rank fails the same way.
      handles_.fail(handle, error.what());
      continue;
    }
    OwnedBuffer out;
    out.data = std::shared_ptr<std::byte[]>(new std::byte[sizeof result]);
    std::memcpy(out.data.get(), &result, sizeof result);
    out.bytes = sizeof result;
    out.shape = {1};
    out.dtype = DataType::int64;
    handles_.complete(handle, std::move(out));
  }
}

int64_t Session::add_set(const std::vector<int64_t>& payload) {
  const std::vector<int> ranks(payload.begin(), payload.end());
  const int32_t id = registry_->add(ranks);
  if (std::binary_search(ranks.begin(), ranks.end(), world_.rank)) {
    sets_.emplace(id, std::make_unique<ProcessSet>(id, ranks, *comm_, config_, make_backend_,
                                                   handles_, logger_));
  }
  logger_.debug("process set {} added: ranks {}", id, ranks);
  return id;
}

int64_t Session::remove_set(int32_t id) {
  if (!registry_->remove(id)) return 0;
  auto it = sets_.find(id);
  if (it == sets_.end()) return 1;  // not a member: nothing to tear down here
  for (auto& [name, entry] : it->second->pending()) {
    {
      std::lock_guard lock(mutex_);
      names_in_flight_.erase({id, name});
    }
    handles_.fail(entry.handle, fmt::format("tensor '{}' on rank {}: process set {} was removed "
                                            "while the operation was pending",
                                            name, world_.rank, id));
  }
  sets_.erase(it);
  logger_.debug("process set {} removed", id);
  return 1;
}

}  // namespace kolo::core
