// A named POSIX shared-memory object mapped into this process: the one place that creates,
// reserves, maps and unmaps /dev/shm objects for the segments (pair rings) and the host arena.
// Names live only for the short handshake that lets the peers open them (the creator unlinks
// them as soon as everyone mapped); the launcher removes any a killed rank left behind.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace kolo::transport::shm {

class Mapping {
 public:
  // Creates `name` (which must not exist), reserves `size` bytes (so a full /dev/shm is an error
  // here, never a SIGBUS on first touch) and maps it zero-filled. Returns nullopt and sets `why`
  // when /dev/shm has no room; throws SystemError for other failures.
  static std::optional<Mapping> create(const std::string& name, size_t size, std::string& why);
  // Maps an existing object of exactly `size` bytes; throws SystemError / ProtocolError.
  static Mapping open(const std::string& name, size_t size);
  // Removes the name (mappings stay valid). Idempotent; errors are ignored.
  static void unlink(const std::string& name);

  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  [[nodiscard]] std::byte* base() const { return base_; }
  [[nodiscard]] size_t size() const { return size_; }

 private:
  Mapping(std::byte* base, size_t size) : base_(base), size_(size) {}

  std::byte* base_;
  size_t size_;
};

// Free bytes in /dev/shm (statvfs), or nullopt if it cannot be asked.
std::optional<uint64_t> dev_shm_free_bytes();

}  // namespace kolo::transport::shm
