#include "core/tensor_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "base/errors.h"

namespace kolo::core {

TensorQueue::TensorQueue() : wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!wake_fd_.valid()) throw SystemError("eventfd", errno, "tensor queue wake-up");
}

TensorQueue::~TensorQueue() = default;

void TensorQueue::push(TensorEntry entry, bool wake) {
  bool signal = false;
  {
    std::lock_guard lock(mutex_);
    if (entries_.empty()) oldest_pushed_ = std::chrono::steady_clock::now();
    entries_.push_back(std::move(entry));
    signal = wake && !batch_signalled_;
    batch_signalled_ = batch_signalled_ || signal;
  }
  // One wake-up per batch of queued entries (a write per entry cost a syscall each, 100 per
  // batch of async ops). An entry pushed without one leaves the batch unsignalled, so the next
  // push that wants a wake-up still writes it.
  if (signal) this->wake();
}

bool TensorQueue::has_entries() {
  std::lock_guard lock(mutex_);
  return !entries_.empty();
}

bool TensorQueue::has_entries_older_than(std::chrono::steady_clock::duration age) {
  std::lock_guard lock(mutex_);
  return !entries_.empty() && std::chrono::steady_clock::now() - oldest_pushed_ >= age;
}

void TensorQueue::wake() {
  signalled_.store(true, std::memory_order_release);
  uint64_t one = 1;
  // A full counter (never in practice) still leaves the fd readable, which is all that matters.
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.fd(), &one, sizeof(one));
}

std::vector<TensorEntry> TensorQueue::take_all() {
  signalled_.store(false, std::memory_order_relaxed);  // before the read, as the eventfd's signal
  uint64_t count = 0;
  [[maybe_unused]] ssize_t n = ::read(wake_fd_.fd(), &count, sizeof(count));
  std::lock_guard lock(mutex_);
  std::vector<TensorEntry> taken;
  taken.swap(entries_);
  batch_signalled_ = false;
  return taken;
}

}  // namespace kolo::core
