// The fusion buffer: one growable host byte buffer, aligned to 64 bytes (cache lines and vector
// loads), reused across cycles so steady-state training allocates nothing.
#pragma once

#include <cstddef>
#include <span>

namespace kolo::fusion {

class FusionBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  FusionBuffer() = default;
  ~FusionBuffer();
  FusionBuffer(FusionBuffer&& other) noexcept;
  FusionBuffer& operator=(FusionBuffer&& other) noexcept;
  FusionBuffer(const FusionBuffer&) = delete;
  FusionBuffer& operator=(const FusionBuffer&) = delete;

  // The first `bytes` bytes of the buffer, growing it if needed. Growing does not keep the old
  // contents (a fusion buffer is refilled every cycle) and invalidates earlier spans.
  std::span<std::byte> get(size_t bytes);

  [[nodiscard]] size_t capacity() const { return capacity_; }
  [[nodiscard]] std::byte* data() { return data_; }

 private:
  void release();

  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace kolo::fusion
