#include "core/handle_table.h"

#include "base/errors.h"

namespace kolo::core {

size_t TensorEntry::bytes() const {
  return static_cast<size_t>(request.num_elements()) * dtype_size(request.dtype);
}

HandleId HandleTable::create() {
  std::lock_guard lock(mutex_);
  HandleId handle = next_++;
  states_.emplace(handle, State{});
  return handle;
}

void HandleTable::complete(HandleId handle, OwnedBuffer output) {
  {
    std::lock_guard lock(mutex_);
    auto it = states_.find(handle);
    if (it == states_.end() || it->second.done) return;
    it->second.done = true;
    it->second.output = std::move(output);
  }
  done_.notify_all();
}

void HandleTable::fail(HandleId handle, const std::string& error) {
  {
    std::lock_guard lock(mutex_);
    auto it = states_.find(handle);
    if (it == states_.end() || it->second.done) return;
    it->second.done = true;
    it->second.error = error;
  }
  done_.notify_all();
}

const HandleTable::State& HandleTable::find(HandleId handle) const {
  auto it = states_.find(handle);
  if (it == states_.end()) {
    throw InvalidArgument("unknown handle " + std::to_string(handle) +
                          " (already synchronized, or never returned by an async op)");
  }
  return it->second;
}

bool HandleTable::poll(HandleId handle) const {
  std::lock_guard lock(mutex_);
  return find(handle).done;
}

void HandleTable::wait(HandleId handle) const {
  std::unique_lock lock(mutex_);
  ++waiters_;
  done_.wait(lock, [&] {
    // find() throws for an unknown handle: leave the count right on that way out too.
    bool done = false;
    try {
      done = find(handle).done;
    } catch (...) {
      --waiters_;
      throw;
    }
    if (done) --waiters_;
    return done;
  });
  const State& state = find(handle);
  if (state.error) throw Error(*state.error);
}

bool HandleTable::anyone_waiting() const {
  std::lock_guard lock(mutex_);
  return waiters_ > 0;
}

OwnedBuffer HandleTable::release(HandleId handle) {
  std::lock_guard lock(mutex_);
  const State& state = find(handle);
  if (!state.done) {
    throw InvalidArgument("handle " + std::to_string(handle) + " is still pending");
  }
  OwnedBuffer output = std::move(states_.at(handle).output);
  states_.erase(handle);
  return output;
}

}  // namespace kolo::core
