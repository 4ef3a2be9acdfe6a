#include "fusion/fusion_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace kolo::fusion {
namespace {

bool aligned(const std::byte* p) {
  return reinterpret_cast<uintptr_t>(p) % FusionBuffer::kAlignment == 0;
}

TEST(FusionBufferTest, StartsEmptyAndGrowsAligned) {
  FusionBuffer buffer;
  EXPECT_EQ(buffer.capacity(), 0u);
  EXPECT_TRUE(buffer.get(0).empty());
  auto span = buffer.get(100);
  EXPECT_EQ(span.size(), 100u);
  EXPECT_TRUE(aligned(span.data()));
  EXPECT_GE(buffer.capacity(), 100u);
  std::memset(span.data(), 0xab, span.size());
}

TEST(FusionBufferTest, ReusedWhenLargeEnough) {
  FusionBuffer buffer;
  std::byte* first = buffer.get(10000).data();
  size_t capacity = buffer.capacity();
  EXPECT_EQ(buffer.get(5000).data(), first);
  EXPECT_EQ(buffer.get(capacity).data(), first);
  EXPECT_EQ(buffer.capacity(), capacity);
  auto bigger = buffer.get(capacity + 1);
  EXPECT_TRUE(aligned(bigger.data()));
  EXPECT_GT(buffer.capacity(), capacity);
  std::memset(bigger.data(), 0, bigger.size());
}

TEST(FusionBufferTest, MovesOwnership) {
  FusionBuffer a;
  std::byte* data = a.get(64).data();
  FusionBuffer b(std::move(a));
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(a.capacity(), 0u);  // NOLINT(bugprone-use-after-move): moved-from state is defined
  FusionBuffer c;
  c.get(1);
  c = std::move(b);
  EXPECT_EQ(c.data(), data);
}

}  // namespace
}  // namespace kolo::fusion
