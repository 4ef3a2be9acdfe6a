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

void TensorQueue::push(TensorEntry entry) {
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    first = entries_.empty();
    entries_.push_back(std::move(entry));
  }
  // One wake-up per batch: a non-empty queue was already signalled by the push that made it
  // non-empty, and take_all() clears the signal before it takes the entries, so an entry is
  // never left queued without a signal after it (a write per entry cost a syscall each, 100 per
  // batch of async ops).
  if (first) wake();
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
  return taken;
}

}  // namespace kolo::core
