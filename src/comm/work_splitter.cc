#include "comm/work_splitter.h"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "comm/cpu_relax.h"

namespace kolo::comm {

namespace {

// How long a helper spins for the next job before sleeping, and the caller for the helpers'
// last parts: an arena step of a large allreduce follows the previous one within tens of
// microseconds, and a futex wake-up costs about as much.
constexpr auto kSpin = std::chrono::microseconds(30);

constexpr uint32_t kInsideMask = 0xFE;

// Spins with cpu_relax until `done()` or kSpin passed (the clock read every 64 turns).
template <typename Done>
bool spin_until(Done&& done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (unsigned turn = 1;; ++turn) {
    if (done()) return true;
    detail::cpu_relax();
    if (turn % 64 == 0 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

}  // namespace

WorkSplitter::WorkSplitter(size_t threads) {
  const size_t helpers = threads > 1 ? threads - 1 : 0;
  tids_.assign(helpers, 0);
  std::atomic<size_t> started{0};
  helpers_.reserve(helpers);
  try {
    for (size_t i = 0; i < helpers; ++i) {
      helpers_.emplace_back([this, i, &started] {
        tids_[i] = ::gettid();
        started.fetch_add(1, std::memory_order_release);
        started.notify_one();
        helper_loop();
      });
      // top -H and perf tell them from the framework's threads (at most 15 characters).
      const std::string name = "kolo-reduce-" + std::to_string(i + 1);
      (void)::pthread_setname_np(helpers_.back().native_handle(), name.c_str());
    }
  } catch (...) {  // the system refused a thread: the ones started are stopped before the throw
    stop_and_join();
    throw;
  }
  // Their ids are known (and `started` no longer used) before anyone can ask.
  for (size_t now = started.load(std::memory_order_acquire); now < helpers_.size();
       now = started.load(std::memory_order_acquire)) {
    started.wait(now, std::memory_order_acquire);
  }
}

WorkSplitter::~WorkSplitter() { stop_and_join(); }

void WorkSplitter::stop_and_join() {
  stop_.store(true, std::memory_order_release);
  state_.fetch_add(kGeneration, std::memory_order_release);  // wakes sleepers to see stop_
  state_.notify_all();
  for (std::thread& helper : helpers_) helper.join();
}

void WorkSplitter::run(size_t parts, FunctionRef<void(size_t)> part) {
  if (parts == 0) return;
  // Here every helper is outside (the last run closed its job with none inside).
  part_ = &part;
  parts_ = parts;
  next_.store(0, std::memory_order_relaxed);
  finished_.store(0, std::memory_order_relaxed);
  error_ = nullptr;
  if (!helpers_.empty() && parts > 1) {
    const uint32_t generation = (state_.load(std::memory_order_relaxed) & ~0xFFu) + kGeneration;
    state_.store(generation, std::memory_order_release);  // open, nobody inside
    state_.notify_all();
  }
  take_parts();
  if (!spin_until([&] { return finished_.load(std::memory_order_acquire) == parts; })) {
    for (size_t now = finished_.load(std::memory_order_acquire); now != parts;
         now = finished_.load(std::memory_order_acquire)) {
      finished_.wait(now, std::memory_order_acquire);
    }
  }
  // Close the job once no helper is inside: a helper that joined after the last part was taken
  // leaves at once, having taken nothing.
  for (;;) {
    uint32_t state = state_.load(std::memory_order_acquire);
    if ((state & kInsideMask) == 0 &&
        state_.compare_exchange_weak(state, state | kClosed, std::memory_order_acq_rel)) {
      break;
    }
    if (!spin_until([&] { return (state_.load(std::memory_order_acquire) & kInsideMask) == 0; })) {
      std::this_thread::yield();  // a helper was preempted between its last part and leaving
    }
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void WorkSplitter::take_parts() {
  for (;;) {
    const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= parts_) return;
    try {
      (*part_)(i);
    } catch (...) {
      record_error();
    }
    if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == parts_) finished_.notify_one();
  }
}

void WorkSplitter::record_error() {
  std::lock_guard lock(error_mutex_);
  if (!error_) error_ = std::current_exception();
}

void WorkSplitter::helper_loop() {
  uint32_t seen = 0;  // the generation of the last job this helper looked at
  auto has_new_job = [&](uint32_t state) {
    return (state & kClosed) == 0 && (state & ~0xFFu) != seen;
  };
  for (;;) {
    uint32_t state = state_.load(std::memory_order_acquire);
    if (!has_new_job(state) && !stop_.load(std::memory_order_acquire)) {
      spin_until([&] {
        state = state_.load(std::memory_order_acquire);
        return has_new_job(state) || stop_.load(std::memory_order_acquire);
      });
    }
    while (!has_new_job(state) && !stop_.load(std::memory_order_acquire)) {
      state_.wait(state, std::memory_order_acquire);
      state = state_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    // Join unless the caller closed the job or started another meanwhile.
    if (!state_.compare_exchange_strong(state, state + kInside, std::memory_order_acq_rel)) {
      continue;
    }
    seen = state & ~0xFFu;
    take_parts();
    state_.fetch_sub(kInside, std::memory_order_release);
  }
}

}  // namespace kolo::comm
