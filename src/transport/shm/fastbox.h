// The fast box of a same-host link direction: a small ring of 64-byte lines for tiny sends, each
// line carrying its own sequence number beside its payload. A reader spins on the one line it
// expects next, and when the sequence shows up the payload is in the same cache line, so a tiny
// message moves one line between the cores, where the byte ring (ring.h) moves two (the data's
// and `head`'s) and publishes `head` with a full barrier. (OpenMPI's vader "fast boxes" and
// NCCL's LL protocol rest on the same idea.)
//
// The writer stores the payload, then the sequence with a release store (a plain mov on x86);
// the reader loads the sequence with acquire, copies, and acknowledges only every kAckEvery
// lines in its own cache line; the writer rereads the acknowledgement only when it would wrap.
// A full box never makes anyone wait: ShmLink then sends through the byte ring. How the two are
// kept in one ordered stream is ShmLink's business (shm_link.cc).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/shm/ring.h"

namespace kolo::transport::shm {

struct alignas(kCacheLine) FastboxLine {
  std::atomic<uint64_t> sequence{0};  // line number + 1 once written (never reset: 64-bit)
  uint32_t length = 0;                // payload bytes in this line; published by `sequence`
  std::byte payload[kCacheLine - sizeof(uint64_t) - sizeof(uint32_t)];
};
static_assert(sizeof(FastboxLine) == kCacheLine, "a fast-box line is one cache line");

// 32 KiB per direction: a writer may run this many tiny sends ahead of its reader before it waits.
// 64 lines were as fast at np 2 pinned but slower with 3 ranks on 2 cores (8-byte broadcast
// 0.19-0.25 us against 0.12-0.20), where a rank runs ahead for a whole time slice.
inline constexpr size_t kFastboxLines = 512;
inline constexpr size_t kFastboxAckEvery = kFastboxLines / 4;
inline constexpr size_t kFastboxPayload = sizeof(FastboxLine::payload);

struct alignas(kCacheLine) FastboxRegion {
  alignas(kCacheLine) std::atomic<uint64_t> acked{0};  // lines fully read (reader, every few)
  // Set once by the reader when its waits use the asymmetric wait fence (transport/wait_fence.h,
  // ShmLink::arm_wait): only then may the writer publish without a full barrier.
  alignas(kCacheLine) std::atomic<uint32_t> reader_fences{0};
  FastboxLine lines[kFastboxLines];
};

// The writing side's view.
class FastboxWriter {
 public:
  explicit FastboxWriter(FastboxRegion* region) : region_(region) {}

  // Copies up to size bytes into as many free lines as they need (at most kFastboxLines); returns
  // how many bytes went in (0: the box is full; partial when only some lines are free).
  size_t write(const std::byte* data, size_t size);

  [[nodiscard]] bool reader_fences() const {
    return region_->reader_fences.load(std::memory_order_relaxed) != 0;
  }

 private:
  FastboxRegion* region_;
  uint64_t next_ = 0;        // lines written
  uint64_t seen_acked_ = 0;  // region_->acked as last read
};

// The reading side's view.
class FastboxReader {
 public:
  explicit FastboxReader(FastboxRegion* region) : region_(region) {}

  // Copies up to size bytes out of the lines published so far, in order (a line may be read in
  // several calls); returns how many (0: nothing published).
  size_t read(std::byte* data, size_t size);
  [[nodiscard]] bool readable() const;

  void announce_fences() { region_->reader_fences.store(1, std::memory_order_relaxed); }

 private:
  FastboxRegion* region_;
  uint64_t next_ = 0;    // lines fully read
  uint32_t offset_ = 0;  // bytes of line next_ already read
};

}  // namespace kolo::transport::shm
