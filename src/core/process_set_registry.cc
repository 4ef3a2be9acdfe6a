#include "core/process_set_registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <numeric>

#include "base/errors.h"
#include "core/process_set.h"

namespace kolo::core {

ProcessSetRegistry::ProcessSetRegistry(int world_size) {
  std::vector<int> everyone(static_cast<size_t>(world_size));
  std::iota(everyone.begin(), everyone.end(), 0);
  ranks_.emplace(kGlobalProcessSet, std::move(everyone));
}

int32_t ProcessSetRegistry::add(const std::vector<int>& ranks) {
  std::lock_guard lock(mutex_);
  for (const auto& [existing, members] : ranks_) {
    if (members == ranks) {
      throw InvalidArgument(
          fmt::format("process set with ranks {} already exists (id {})", ranks, existing));
    }
  }
  int32_t id = next_id_;
  if (free_ids_.empty()) {
    ++next_id_;
  } else {
    id = free_ids_.front();
    free_ids_.pop_front();
  }
  ranks_.emplace(id, ranks);
  return id;
}

bool ProcessSetRegistry::remove(int32_t id) {
  std::lock_guard lock(mutex_);
  if (id == kGlobalProcessSet || ranks_.erase(id) == 0) return false;
  free_ids_.push_back(id);
  return true;
}

std::optional<std::vector<int>> ProcessSetRegistry::find(int32_t id) const {
  std::lock_guard lock(mutex_);
  auto it = ranks_.find(id);
  if (it == ranks_.end()) return std::nullopt;
  return it->second;
}

std::vector<int> ProcessSetRegistry::ranks(int32_t id) const {
  auto found = find(id);
  if (!found) throw InvalidArgument(fmt::format("process set {} is not registered", id));
  return *found;
}

std::vector<int32_t> ProcessSetRegistry::ids() const {
  std::lock_guard lock(mutex_);
  std::vector<int32_t> ids;
  for (const auto& [id, ranks] : ranks_) ids.push_back(id);
  return ids;
}

}  // namespace kolo::core
