// A shared-memory segment joining two ranks on one host: a small header, two rings and two fast
// boxes for tiny sends (one of each per direction). The lower rank creates it under a per-job name
// in /dev/shm with every page reserved up front (so a full /dev/shm is an error at creation, never
// a SIGBUS later), the higher rank maps it, and the creator unlinks the name as soon as the peer
// confirms: from then on the memory lives only in the two mappings and vanishes with the processes,
// even on kill -9.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "transport/shm/fastbox.h"
#include "transport/shm/mapping.h"
#include "transport/shm/ring.h"

namespace kolo::transport::shm {

class Segment {
 public:
  // Creates, sizes, reserves and maps `name` (e.g. "/kolo-1a2b-0-0-1"). Returns nullopt and sets
  // `why` if /dev/shm cannot hold it (the caller falls back to TCP); throws SystemError otherwise.
  static std::optional<Segment> create(const std::string& name, size_t ring_bytes,
                                       std::string& why);
  // Maps an existing segment created by the peer; throws SystemError / ProtocolError.
  static Segment open(const std::string& name, size_t ring_bytes);
  // Removes the name (the mappings stay valid). Idempotent; errors are ignored.
  static void unlink(const std::string& name);

  // Ring 0 carries bytes from the creator (lower rank) to the opener; ring 1 the other way.
  [[nodiscard]] Ring ring(int direction) const;
  // The fast box of the same direction.
  [[nodiscard]] FastboxRegion* fastbox(int direction) const;
  [[nodiscard]] size_t size() const { return mapping_.size(); }

  static size_t bytes_needed(size_t ring_bytes);

 private:
  Segment(Mapping mapping, size_t ring_bytes)
      : mapping_(std::move(mapping)), ring_bytes_(ring_bytes) {}

  Mapping mapping_;
  size_t ring_bytes_;
};

// "/kolo-<job tag>-<round>-<a>-<b>": unique per job (the tag derives from the job secret, which
// never appears in it), init round and pair.
std::string segment_name(const std::string& job_tag, uint64_t round, int a, int b);

}  // namespace kolo::transport::shm
