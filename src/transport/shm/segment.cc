#include "transport/shm/segment.h"

#include <fmt/format.h>

#include <new>
#include <utility>

#include "base/errors.h"

namespace kolo::transport::shm {

namespace {

constexpr uint64_t kMagic = 0x6b6f6c6f73686d32ull;  // "kolo shm2": rings, then fast boxes

struct SegmentHeader {
  uint64_t magic;
  uint64_t ring_bytes;
};

size_t header_bytes() { return kCacheLine; }
size_t ring_stride(size_t ring_bytes) { return sizeof(RingHeader) + ring_bytes; }

// The two fast boxes follow the two rings (ring_bytes is a power of two, so they stay aligned).
size_t fastbox_start(size_t ring_bytes) { return header_bytes() + 2 * ring_stride(ring_bytes); }

}  // namespace

size_t Segment::bytes_needed(size_t ring_bytes) {
  return fastbox_start(ring_bytes) + 2 * sizeof(FastboxRegion);
}

std::optional<Segment> Segment::create(const std::string& name, size_t ring_bytes,
                                       std::string& why) {
  auto mapping = Mapping::create(name, bytes_needed(ring_bytes), why);
  if (!mapping) return std::nullopt;
  std::byte* base = mapping->base();
  auto* header = reinterpret_cast<SegmentHeader*>(base);
  header->ring_bytes = ring_bytes;
  for (size_t direction = 0; direction < 2; ++direction) {
    new (base + header_bytes() + direction * ring_stride(ring_bytes)) RingHeader();
    new (base + fastbox_start(ring_bytes) + direction * sizeof(FastboxRegion)) FastboxRegion();
  }
  header->magic = kMagic;
  return Segment(std::move(*mapping), ring_bytes);
}

Segment Segment::open(const std::string& name, size_t ring_bytes) {
  Mapping mapping = Mapping::open(name, bytes_needed(ring_bytes));
  const auto* header = reinterpret_cast<const SegmentHeader*>(mapping.base());
  if (header->magic != kMagic || header->ring_bytes != ring_bytes) {
    throw ProtocolError(
        fmt::format("shared-memory segment {} is not a kolo segment of this job", name));
  }
  return Segment(std::move(mapping), ring_bytes);
}

void Segment::unlink(const std::string& name) { Mapping::unlink(name); }

Ring Segment::ring(int direction) const {
  std::byte* start =
      mapping_.base() + header_bytes() + static_cast<size_t>(direction) * ring_stride(ring_bytes_);
  return Ring(reinterpret_cast<RingHeader*>(start), start + sizeof(RingHeader), ring_bytes_);
}

FastboxRegion* Segment::fastbox(int direction) const {
  return reinterpret_cast<FastboxRegion*>(mapping_.base() + fastbox_start(ring_bytes_) +
                                          static_cast<size_t>(direction) * sizeof(FastboxRegion));
}

std::string segment_name(const std::string& job_tag, uint64_t round, int a, int b) {
  return fmt::format("/kolo-{}-{}-{}-{}", job_tag, round, a, b);
}

}  // namespace kolo::transport::shm
