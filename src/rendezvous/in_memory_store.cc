#include "rendezvous/in_memory_store.h"

#include <algorithm>

#include "rendezvous/timeouts.h"

namespace kolo::rendezvous {

void InMemoryStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard lock(mutex_);
    values_[key] = value;
  }
  changed_.notify_all();
}

std::string InMemoryStore::get(const std::string& key, Duration timeout) {
  std::unique_lock lock(mutex_);
  const bool found = changed_.wait_until(lock, deadline_after(timeout).at(),
                                         [&] { return values_.count(key) != 0; });
  if (!found) throw timeout_waiting_for({key}, timeout, "in-memory store");
  return values_.at(key);
}

int64_t InMemoryStore::add(const std::string& key, int64_t delta) {
  int64_t result = 0;
  {
    std::lock_guard lock(mutex_);
    std::string& stored = values_[key];
    result = add_to_counter(key, stored, delta);
  }
  changed_.notify_all();
  return result;
}

void InMemoryStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  std::unique_lock lock(mutex_);
  auto all_present = [&] {
    return std::all_of(keys.begin(), keys.end(),
                       [&](const std::string& key) { return values_.count(key) != 0; });
  };
  if (changed_.wait_until(lock, deadline_after(timeout).at(), all_present)) return;
  std::vector<std::string> missing;
  for (const auto& key : keys) {
    if (values_.count(key) == 0) missing.push_back(key);
  }
  throw timeout_waiting_for(missing, timeout, "in-memory store");
}

}  // namespace kolo::rendezvous
