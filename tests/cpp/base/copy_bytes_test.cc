#include "base/copy_bytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <vector>

namespace kolo {
namespace {

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using PageBuffer = std::unique_ptr<std::byte, FreeDeleter>;

PageBuffer page_aligned(size_t bytes) {
  const size_t whole_pages = (bytes + 4095) / 4096 * 4096;  // aligned_alloc's size rule
  return PageBuffer(static_cast<std::byte*>(std::aligned_alloc(4096, whole_pages)));
}

std::vector<std::byte> pattern(size_t bytes) {
  std::vector<std::byte> values(bytes);
  for (size_t i = 0; i < bytes; ++i) values[i] = static_cast<std::byte>((i * 131 + 7) % 251);
  return values;
}

TEST(CopyBytes, ShortPageDistanceIsOneToSixtyThreeBytesOfDestinationPastTheSource) {
  alignas(64) static std::byte page[2 * 4096];
  EXPECT_FALSE(detail::short_page_distance(page, page));
  EXPECT_FALSE(detail::short_page_distance(page + 4096, page));  // a whole page apart
  EXPECT_TRUE(detail::short_page_distance(page + 16, page));
  EXPECT_TRUE(detail::short_page_distance(page + 4096 + 63, page));
  EXPECT_FALSE(detail::short_page_distance(page + 64, page));
  EXPECT_FALSE(detail::short_page_distance(page, page + 16));  // destination before the source
}

// Every size around the 64-byte steps and the threshold, at distances inside and outside the
// window, and destinations at every offset within a line: the bytes arrive, nothing past them
// is written.
TEST(CopyBytes, CopiesEveryByteAtEveryDistanceAndSize) {
  const size_t most = 3 * detail::kRepMovsbFromBytes + 200;
  const std::vector<std::byte> source_bytes = pattern(most + 4096);
  PageBuffer source = page_aligned(most + 8192);
  PageBuffer target = page_aligned(most + 8192);
  std::copy(source_bytes.begin(), source_bytes.end(), source.get());
  for (const size_t from_at : {0, 8, 48}) {
    for (const size_t to_at : {0, 1, 16, 40, 63, 64, 100, 4095}) {
      for (const size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65},
                                 detail::kRepMovsbFromBytes - 1, detail::kRepMovsbFromBytes,
                                 detail::kRepMovsbFromBytes + 63, most}) {
        std::fill_n(target.get(), most + 8192, std::byte{0xee});
        copy_bytes(target.get() + to_at, source.get() + from_at, bytes);
        for (size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(target.get()[to_at + i], source.get()[from_at + i])
              << "byte " << i << " of " << bytes << ", destination +" << to_at << ", source +"
              << from_at;
        }
        EXPECT_EQ(target.get()[to_at + bytes], std::byte{0xee}) << bytes << " bytes";
        if (to_at > 0) {
          EXPECT_EQ(target.get()[to_at - 1], std::byte{0xee});
        }
      }
    }
  }
}

TEST(CopyBytes, MoveBytesHandlesOverlapBothWays) {
  for (const long shift : {-100L, -16L, -1L, 1L, 16L, 100L}) {
    const size_t bytes = 3 * detail::kRepMovsbFromBytes;
    std::vector<std::byte> buffer = pattern(bytes + 256);
    const std::vector<std::byte> before = buffer;
    std::byte* from = buffer.data() + 128;
    move_bytes(from + shift, from, bytes);
    for (size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(buffer[static_cast<size_t>(128 + shift) + i], before[128 + i])
          << "shift " << shift << ", byte " << i;
    }
  }
}

TEST(CopyBytes, MoveBytesOfDisjointRangesCopies) {
  const std::vector<std::byte> source = pattern(5000);
  std::vector<std::byte> target(5000 + 16, std::byte{0});
  move_bytes(target.data() + 16, source.data(), source.size());
  EXPECT_TRUE(std::equal(source.begin(), source.end(), target.begin() + 16));
}

}  // namespace
}  // namespace kolo
