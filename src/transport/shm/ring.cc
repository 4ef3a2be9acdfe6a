#include "transport/shm/ring.h"

#include <algorithm>
#include <cstring>

#include "base/copy_bytes.h"

namespace kolo::transport::shm {

size_t Ring::readable() const {
  return static_cast<size_t>(header_->head.load(std::memory_order_acquire) -
                             header_->tail.load(std::memory_order_relaxed));
}

size_t Ring::writable() const {
  return capacity() - static_cast<size_t>(header_->head.load(std::memory_order_relaxed) -
                                          header_->tail.load(std::memory_order_acquire));
}

bool Ring::drained() {
  const uint64_t head = header_->head.load(std::memory_order_relaxed);
  if (seen_tail_ == head) return true;
  seen_tail_ = header_->tail.load(std::memory_order_acquire);
  return seen_tail_ == head;
}

size_t Ring::write_some(const std::byte* data, size_t size) {
  const uint64_t head = header_->head.load(std::memory_order_relaxed);
  if (capacity() - static_cast<size_t>(head - seen_tail_) < size) {
    seen_tail_ = header_->tail.load(std::memory_order_acquire);
  }
  const size_t n = std::min(size, capacity() - static_cast<size_t>(head - seen_tail_));
  if (n == 0) return 0;
  const size_t at = static_cast<size_t>(head) & mask_;
  const size_t first = std::min(n, capacity() - at);
  copy_bytes(data_ + at, data, first);
  if (n > first) copy_bytes(data_, data + first, n - first);
  // A full barrier (xchg) rather than a release store: producer_should_ring() must read the
  // consumer's flag only after this store is visible (see consumer_arm); xchg is cheaper than a
  // store followed by a separate fence.
  header_->head.exchange(head + n, std::memory_order_seq_cst);
  return n;
}

size_t Ring::read_some(std::byte* data, size_t size) {
  const uint64_t tail = header_->tail.load(std::memory_order_relaxed);
  const uint64_t head = header_->head.load(std::memory_order_acquire);
  const size_t n = std::min(size, static_cast<size_t>(head - tail));
  if (n == 0) return 0;
  const size_t at = static_cast<size_t>(tail) & mask_;
  const size_t first = std::min(n, capacity() - at);
  copy_bytes(data, data_ + at, first);
  if (n > first) copy_bytes(data + first, data_, n - first);
  header_->tail.exchange(tail + n, std::memory_order_seq_cst);  // full barrier, as in write_some
  return n;
}

bool Ring::consumer_arm() {
  header_->consumer_waiting.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return readable() > 0;
}

bool Ring::producer_arm() {
  header_->producer_waiting.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return writable() > 0;
}

bool Ring::consumer_should_ring() {
  // read_some's xchg pairs with producer_arm's fence: either it sees our new tail or we see
  // its flag.
  return header_->producer_waiting.load(std::memory_order_relaxed) != 0 &&
         header_->producer_waiting.exchange(0, std::memory_order_seq_cst) != 0;
}

bool Ring::producer_should_ring() {
  // write_some's xchg already ordered the head store before this load.
  return header_->consumer_waiting.load(std::memory_order_relaxed) != 0 &&
         header_->consumer_waiting.exchange(0, std::memory_order_seq_cst) != 0;
}

}  // namespace kolo::transport::shm
