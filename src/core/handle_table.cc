#include "core/handle_table.h"

#include "base/errors.h"

namespace kolo::core {

size_t TensorEntry::bytes() const {
  return static_cast<size_t>(request.num_elements()) * dtype_size(request.dtype);
}

HandleId HandleTable::create(bool caller_drives) {
  std::lock_guard lock(mutex_);
  HandleId handle = next_++;
  State& state = states_[handle];
  state.caller_drives = caller_drives;
  return handle;
}

bool HandleTable::caller_drives(HandleId handle) const {
  std::lock_guard lock(mutex_);
  auto it = states_.find(handle);
  return it != states_.end() && it->second.caller_drives;
}

void HandleTable::complete(HandleId handle, OwnedBuffer output) {
  std::pair<HandleId, OwnedBuffer> one{handle, std::move(output)};
  complete_all({&one, 1});
}

void HandleTable::complete_all(std::span<std::pair<HandleId, OwnedBuffer>> finished) {
  {
    std::lock_guard lock(mutex_);
    for (auto& [handle, output] : finished) {
      auto it = states_.find(handle);
      if (it == states_.end() || it->second.done) continue;
      it->second.done = true;
      it->second.output = std::move(output);
    }
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

bool HandleTable::succeeded(HandleId handle) const {
  std::lock_guard lock(mutex_);
  const State& state = find(handle);
  return state.done && !state.error;
}

void HandleTable::wait(HandleId handle) const {
  std::unique_lock lock(mutex_);
  (void)wait_until(lock, handle, std::chrono::steady_clock::time_point::max());
}

bool HandleTable::wait_for(HandleId handle, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return wait_until(lock, handle, std::chrono::steady_clock::now() + timeout);
}

bool HandleTable::wait_until(std::unique_lock<std::mutex>& lock, HandleId handle,
                             std::chrono::steady_clock::time_point deadline) const {
  // find() throws for an unknown handle before anything is counted.
  if (!find(handle).done) {
    ++waiters_;
    // Another thread may release the handle once it is done: gone counts as done here, and the
    // find() below then says it is unknown. Nothing throws between the two counts.
    auto done = [&] {
      auto it = states_.find(handle);
      return it == states_.end() || it->second.done;
    };
    bool finished = true;
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      done_.wait(lock, done);
    } else {
      finished = done_.wait_until(lock, deadline, done);
    }
    --waiters_;
    if (!finished) return false;
  }
  const State& state = find(handle);
  if (state.error) throw Error(*state.error);
  return true;
}

bool HandleTable::anyone_waiting() const {
  std::lock_guard lock(mutex_);
  return waiters_ > 0 || caller_waits_ > 0;
}

void HandleTable::begin_caller_wait() {
  std::lock_guard lock(mutex_);
  ++caller_waits_;
}

void HandleTable::end_caller_wait() {
  std::lock_guard lock(mutex_);
  --caller_waits_;
}

bool HandleTable::release_if_done(HandleId handle) {
  std::optional<std::string> error;
  {
    std::lock_guard lock(mutex_);
    const State& state = find(handle);  // throws for an unknown handle
    if (!state.done) return false;
    error = state.error;
    states_.erase(handle);
  }
  if (error) throw Error(*error);
  return true;
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
