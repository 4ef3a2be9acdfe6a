// comm::WorkSplitter: a few helper threads that share a large collective's local memory work
// (copies and folds of one arena step) with the thread running the collective. The rank's
// background thread is otherwise the only thread copying and folding while the rest of its share
// of the cores waits (on the GPU, or between backward passes), and one thread cannot use the
// memory bandwidth of a socket.
//
// Helpers are started by the constructor and inherit the constructing thread's CPU mask (the
// runtime makes one on the background thread, after the rank's placement, so they stay in the
// rank's share). Between calls they spin for a few microseconds (the next step of a large
// allreduce is usually that close) and then sleep on a futex (std::atomic::wait): an idle
// splitter costs nothing. The destructor wakes and joins them.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "base/function_ref.h"

namespace kolo::comm {

class WorkSplitter {
 public:
  // `threads` in all, the caller of run() included: threads - 1 helpers (none for 0 or 1).
  // Throws std::system_error when the system refuses a thread (none is left running).
  explicit WorkSplitter(size_t threads);
  ~WorkSplitter();
  WorkSplitter(const WorkSplitter&) = delete;
  WorkSplitter& operator=(const WorkSplitter&) = delete;

  // The threads that run() spreads parts over, the caller included.
  [[nodiscard]] size_t threads() const { return helpers_.size() + 1; }
  // Calls part(i) once for each i in [0, parts), spread over the caller and the helpers, and
  // returns when all have returned. The caller takes parts as the helpers do (whoever comes
  // next takes the next part), so a helper slow to wake only means fewer threads. An exception
  // thrown by a part is rethrown here (the first one; the other parts still run). One caller at a
  // time.
  void run(size_t parts, FunctionRef<void(size_t)> part);
  // The helpers' thread ids (for tests reading their CPU masks).
  [[nodiscard]] const std::vector<pid_t>& helper_tids() const { return tids_; }

 private:
  void helper_loop();
  void stop_and_join();
  void take_parts();  // runs parts of the current job until none is left
  void record_error();

  // state_: bit 0 closed (no helper may join the job), bits 1-7 helpers inside the job, bits
  // 8-31 the job's generation. A helper joins with a compare-and-swap that fails once the caller
  // has closed the job or started another, so the job's fields below are only read by helpers
  // that joined it, and only written while none is inside.
  static constexpr uint32_t kClosed = 1;
  static constexpr uint32_t kInside = 2;
  static constexpr uint32_t kGeneration = 256;
  std::atomic<uint32_t> state_{kClosed};
  std::atomic<bool> stop_{false};
  std::atomic<size_t> next_{0};      // the next part to take
  std::atomic<size_t> finished_{0};  // parts that returned
  size_t parts_ = 0;
  const FunctionRef<void(size_t)>* part_ = nullptr;
  std::mutex error_mutex_;
  std::exception_ptr error_;

  std::vector<std::thread> helpers_;
  std::vector<pid_t> tids_;
};

}  // namespace kolo::comm
