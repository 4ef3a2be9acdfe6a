// Handles returned by enqueue: pending until the background thread completes or fails them.
// Thread-safe; wait() blocks on a condition variable (the Python layer releases the GIL first).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/tensor_entry.h"

namespace kolo::core {

class HandleTable {
 public:
  // `caller_drives`: the caller that waits for it runs the cycles itself (Session::drive).
  HandleId create(bool caller_drives = false);
  // Whether `handle` was created to be driven by its caller; false for an unknown handle.
  [[nodiscard]] bool caller_drives(HandleId handle) const;
  void complete(HandleId handle, OwnedBuffer output = {});
  // complete() for several handles under one lock and with one wake-up: the handles of a fused
  // group become done together, so a caller waiting on the first is not woken (and, sharing the
  // background thread's core, switched to) once per handle only to wait for the next.
  // The outputs are moved out of `finished`.
  void complete_all(std::span<std::pair<HandleId, OwnedBuffer>> finished);
  void fail(HandleId handle, const std::string& error);

  // True once done or failed. Throws InvalidArgument for an unknown handle.
  bool poll(HandleId handle) const;
  // True once done without a failure; false while pending or after a failure. Keeps the handle
  // (a front end that finishes several done operations at once reads their results early and
  // still synchronizes each one later). Throws InvalidArgument for an unknown handle.
  [[nodiscard]] bool succeeded(HandleId handle) const;
  // Blocks until done; throws kolo::Error with the failure message. Does not release the handle.
  void wait(HandleId handle) const;
  // wait() for at most `timeout`: false if still pending then (so a caller can look at other
  // things, such as a pending Ctrl-C, between slices of a long wait).
  bool wait_for(HandleId handle, std::chrono::milliseconds timeout) const;
  // Whether some thread is blocked in wait() now, or inside a caller's wait made of slices
  // (begin_caller_wait .. end_caller_wait: the Python layer's synchronize, which looks for Ctrl-C
  // between its slices).
  [[nodiscard]] bool anyone_waiting() const;
  // A caller's wait that may span several wait_for() slices: between them it still counts as
  // waiting. Ranks oversubscribing their cores could otherwise miss the scheduler for longer
  // than the session's grace between waits, and the deadlock watch, which needs every rank
  // waiting, restarted again and again (session 39: a 5 s bound took 17-95 s at np 3 on 2 cores).
  void begin_caller_wait();
  void end_caller_wait();
  // Forgets `handle` if it is done and returns true, rethrowing its failure (after forgetting
  // it) as wait() does; false, with nothing changed, while it is pending. Never waits and
  // registers no waiter, so the background thread's "is anyone waiting" stays as it was.
  bool release_if_done(HandleId handle);
  // Forgets a finished handle and returns what it produced (allgather output). Throws if unknown
  // or still pending.
  OwnedBuffer release(HandleId handle);

 private:
  struct State {
    bool done = false;
    bool caller_drives = false;
    std::optional<std::string> error;
    OwnedBuffer output;
  };
  const State& find(HandleId handle) const;
  // Waits under `lock` until done or `deadline`; rethrows a failure. The one place waiters_ is
  // counted.
  bool wait_until(std::unique_lock<std::mutex>& lock, HandleId handle,
                  std::chrono::steady_clock::time_point deadline) const;

  mutable std::mutex mutex_;
  mutable std::condition_variable done_;
  mutable int waiters_ = 0;  // threads inside wait(), guarded by mutex_
  int caller_waits_ = 0;     // callers between begin_caller_wait and end_caller_wait, likewise
  std::unordered_map<HandleId, State> states_;
  HandleId next_ = 1;
};

}  // namespace kolo::core
