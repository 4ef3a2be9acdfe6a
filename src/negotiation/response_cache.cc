#include "negotiation/response_cache.h"

#include <fmt/format.h>

#include "base/errors.h"

namespace kolo::negotiation {

ResponseCache::ResponseCache(size_t capacity) : capacity_(capacity) {}

ResponseCache::Lookup ResponseCache::lookup(const Request& request) const {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return {};
  const Entry& entry = *entries_[it->second];
  return {entry.request == request ? State::hit : State::invalid, it->second};
}

void ResponseCache::put(const Response& response, const Request& local_request) {
  if (!enabled()) return;
  if (!response.error.empty() || response.names.size() != 1 ||
      response.names[0] != local_request.name) {
    throw InvalidArgument(fmt::format(
        "response cache takes successful single-tensor responses matching the request; got {} "
        "name(s){} for request '{}'",
        response.names.size(), response.error.empty() ? "" : " with an error", local_request.name));
  }
  if (auto existing = bit_of(local_request.name)) erase(*existing);
  if (size() >= capacity_) erase(lru_.back());

  uint32_t bit;
  if (!free_bits_.empty()) {
    bit = *free_bits_.begin();
    free_bits_.erase(free_bits_.begin());
  } else {
    bit = bit_count();
    entries_.emplace_back();
  }
  lru_.push_front(bit);
  entries_[bit] = Entry{response, local_request, lru_.begin()};
  by_name_[local_request.name] = bit;
}

bool ResponseCache::contains(uint32_t bit) const {
  return bit < entries_.size() && entries_[bit].has_value();
}

const Response& ResponseCache::response(uint32_t bit) const {
  if (!contains(bit))
    throw InvalidArgument(fmt::format("response cache has no entry at bit {}", bit));
  return entries_[bit]->response;
}

std::optional<uint32_t> ResponseCache::bit_of(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

void ResponseCache::touch(uint32_t bit) {
  if (!contains(bit)) return;
  lru_.splice(lru_.begin(), lru_, entries_[bit]->lru_position);
}

void ResponseCache::erase(uint32_t bit) {
  if (!contains(bit)) return;
  Entry& entry = *entries_[bit];
  lru_.erase(entry.lru_position);
  by_name_.erase(entry.request.name);
  entries_[bit].reset();
  free_bits_.insert(bit);
}

}  // namespace kolo::negotiation
