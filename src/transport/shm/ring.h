// A single-producer/single-consumer byte ring living in shared memory: one per direction of a
// same-host link. Positions are free-running 64-bit byte counters (never wrap in practice), so
// "full" and "empty" need no extra flag. The producer owns `head`, the consumer owns `tail`;
// each sits on its own cache line so the two processes do not fight over one line.
//
// Waiting: a side that cannot move sets its *_waiting flag, then looks again (Dekker-style with
// seq_cst fences on both sides); the other side, after moving, clears a set flag and rings the
// doorbell (one byte on the pair's socket), so a sleeping process wakes in poll(2).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kolo::transport::shm {

inline constexpr size_t kCacheLine = 64;

struct alignas(kCacheLine) RingHeader {
  alignas(kCacheLine) std::atomic<uint64_t> head{0};  // bytes ever written (producer)
  alignas(kCacheLine) std::atomic<uint64_t> tail{0};  // bytes ever read (consumer)
  alignas(kCacheLine) std::atomic<uint32_t> consumer_waiting{0};
  alignas(kCacheLine) std::atomic<uint32_t> producer_waiting{0};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "rings need lock-free 64-bit atomics");

// A view of one ring: header plus `capacity` data bytes (a power of two) right after it.
class Ring {
 public:
  Ring(RingHeader* header, std::byte* data, size_t capacity)
      : header_(header), data_(data), mask_(capacity - 1) {}

  // Copies up to data.size() bytes in; returns how many (0: full).
  size_t write_some(const std::byte* data, size_t size);
  // Copies up to size bytes out; returns how many (0: empty).
  size_t read_some(std::byte* data, size_t size);

  [[nodiscard]] size_t readable() const;
  // Producer side: whether the consumer has read every byte written so far (rereads `tail` only
  // when the cached value says no).
  bool drained();
  [[nodiscard]] size_t writable() const;

  // Sets the waiting flag, then tells whether the ring moved meanwhile (true: do not sleep).
  bool consumer_arm();
  bool producer_arm();
  // After moving: true if the other side asked to be woken (its flag is cleared here).
  bool consumer_should_ring();
  bool producer_should_ring();

 private:
  [[nodiscard]] size_t capacity() const { return mask_ + 1; }

  RingHeader* header_;
  std::byte* data_;
  size_t mask_;
  // The other side's position as last seen: the producer rereads `tail` (a cache miss: the
  // consumer just wrote it) only when the cached value says the ring is too full.
  uint64_t seen_tail_ = 0;
};

}  // namespace kolo::transport::shm
