// Where enqueue() puts new entries for the background thread. Enqueueing writes to an eventfd
// so an idle background thread wakes at once (a lone op must not sit out a cycle).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "base/unique_fd.h"
#include "core/tensor_entry.h"

namespace kolo::core {

class TensorQueue {
 public:
  TensorQueue();
  ~TensorQueue();
  TensorQueue(const TensorQueue&) = delete;
  TensorQueue& operator=(const TensorQueue&) = delete;

  // `wake` false: the caller runs the cycle itself (Session::drive), so the background thread
  // is left asleep; waking it would cost the caller's core two context switches per operation.
  void push(TensorEntry entry, bool wake = true);
  // Whether entries wait to be taken (with or without a wake-up).
  [[nodiscard]] bool has_entries();
  // Whether the oldest entry waiting was queued at least `age` ago.
  [[nodiscard]] bool has_entries_older_than(std::chrono::steady_clock::duration age);
  // Takes everything queued so far (in enqueue order) and clears the wake signal.
  std::vector<TensorEntry> take_all();
  // Wakes the background thread without adding work (shutdown).
  void wake();
  // Readable while work or a wake-up is waiting; for poll(2).
  [[nodiscard]] int wake_fd() const { return wake_fd_.fd(); }
  // The same without a system call: work or a wake-up waits (until take_all()).
  [[nodiscard]] bool signalled() const { return signalled_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> signalled_{false};
  std::mutex mutex_;
  std::vector<TensorEntry> entries_;
  std::chrono::steady_clock::time_point oldest_pushed_;  // of entries_[0] (under mutex_)
  bool batch_signalled_ = false;  // a push already woke the thread for entries_ (under mutex_)
  UniqueFd wake_fd_;
};

}  // namespace kolo::core
