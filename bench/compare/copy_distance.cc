// What memcpy costs by the distance between destination and source modulo a page, beside kolo's
// copy_bytes (src/base/copy_bytes.h), which avoids `rep movsb` at the distances where some CPUs
// run it at a twentieth of their speed:
//   c++ -O2 -std=c++20 -I src -o copy_distance bench/compare/copy_distance.cc && ./copy_distance
// One line per size and distance: GB/s of memcpy and of copy_bytes on warm buffers (the best of
// three runs of ~20 ms each, so a neighbour's burst does not decide a cell).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/copy_bytes.h"

namespace {

template <typename Copy>
double gigabytes_per_second(Copy copy, std::byte* to, const std::byte* from, size_t bytes) {
  const int iterations = static_cast<int>(std::max<size_t>(20'000'000 / bytes, 3));
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      copy(to, from, bytes);
      asm volatile("" : : "r"(to) : "memory");  // every copy happens
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::max(best, static_cast<double>(bytes) * iterations / took.count() / 1e9);
  }
  return best;
}

}  // namespace

int main() {
  constexpr size_t kMost = size_t{16} << 20;
  auto* from = static_cast<std::byte*>(std::aligned_alloc(4096, kMost + 4096));
  auto* to = static_cast<std::byte*>(std::aligned_alloc(4096, kMost + 4096));
  std::memset(from, 1, kMost + 4096);
  std::memset(to, 2, kMost + 4096);
  std::printf("%10s %9s %9s %14s %16s\n", "bytes", "to+", "from+", "memcpy GB/s",
              "copy_bytes GB/s");
  for (const size_t bytes : {size_t{4} << 10, size_t{32} << 10, size_t{128} << 10,
                             size_t{512} << 10, size_t{4} << 20, kMost}) {
    // Distances 0, 16 and 48 (16 and 48 inside copy_bytes' window: the destination that many
    // bytes past the source), -16 and 64 (outside it).
    for (const auto& [to_at, from_at] :
         {std::pair<size_t, size_t>{0, 0}, {16, 0}, {48, 0}, {0, 16}, {64, 0}}) {
      const double plain = gigabytes_per_second(
          [](std::byte* t, const std::byte* f, size_t n) { std::memcpy(t, f, n); }, to + to_at,
          from + from_at, bytes);
      const double ours = gigabytes_per_second(
          [](std::byte* t, const std::byte* f, size_t n) { kolo::copy_bytes(t, f, n); }, to + to_at,
          from + from_at, bytes);
      std::printf("%10zu %9zu %9zu %14.1f %16.1f\n", bytes, to_at, from_at, plain, ours);
    }
  }
  std::free(from);
  std::free(to);
}
