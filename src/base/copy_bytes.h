// memcpy, minus a pathology of `rep movsb`. glibc's memcpy copies from a few KiB up to about the
// L2 cache's size with `rep movsb`, which some CPUs run at a twentieth of their speed when the
// destination lies a few bytes past the source modulo a page (0 < (to - from) mod 4096 < 64): on
// this project's AMD EPYC VM a 128 KiB memcpy ran at 2 GB/s there against 33-47 GB/s at any other
// distance (bench/compare/copy_distance.cc prints the table). Collectives copy between buffers
// whose page offsets nobody chose (an arena slot starts on a page, a malloc'd buffer 16 bytes past
// one, an allgather's block anywhere in its output), so their copies go through copy_bytes: at
// such a distance it copies 64 bytes at a time with vector moves the compiler inlines (25-33 GB/s
// there), and calls memcpy everywhere else.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kolo {

namespace detail {

// Below this glibc does not use `rep movsb` (its threshold is 2 KiB and up, by vector width).
inline constexpr size_t kRepMovsbFromBytes = 2048;
// From about the L2 cache's size on glibc leaves `rep movsb` for its own loops (AMD) or
// non-temporal stores, which are faster than 64-byte moves at that size.
inline size_t rep_movsb_until_bytes() {
  static const size_t until = [] {
    const long l2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? static_cast<size_t>(l2) : size_t{512} << 10;
  }();
  return until;
}

inline bool short_page_distance(const void* to, const void* from) {
  const auto distance =
      (reinterpret_cast<uintptr_t>(to) - reinterpret_cast<uintptr_t>(from)) % 4096;
  return distance != 0 && distance < 64;
}

inline void copy_by_lines(std::byte* to, const std::byte* from, size_t bytes) {
  for (; bytes >= 64; bytes -= 64, to += 64, from += 64) __builtin_memcpy(to, from, 64);
  std::memcpy(to, from, bytes);
}

}  // namespace detail

// memcpy (the ranges do not overlap).
inline void copy_bytes(void* to, const void* from, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)  // `rep movsb` is x86's alone
  if (bytes >= detail::kRepMovsbFromBytes && detail::short_page_distance(to, from) &&
      bytes < detail::rep_movsb_until_bytes()) {
    return detail::copy_by_lines(static_cast<std::byte*>(to), static_cast<const std::byte*>(from),
                                 bytes);
  }
#endif
  std::memcpy(to, from, bytes);
}

// memmove: copy_bytes where the ranges do not overlap.
inline void move_bytes(void* to, const void* from, size_t bytes) {
  const auto t = reinterpret_cast<uintptr_t>(to);
  const auto f = reinterpret_cast<uintptr_t>(from);
  if (t + bytes <= f || f + bytes <= t) return copy_bytes(to, from, bytes);
  std::memmove(to, from, bytes);
}

}  // namespace kolo
