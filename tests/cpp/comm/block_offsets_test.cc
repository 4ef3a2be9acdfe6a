// detail::BlockOffsets (comm/collective_checks.h): each block's start when the blocks lie back to
// back, plus the total, the same whether held inline (up to 16 blocks) or on the heap beyond.
#include <gtest/gtest.h>

#include <cstddef>
#include <numeric>
#include <vector>

#include "comm/collective_checks.h"

namespace kolo::comm::detail {
namespace {

void expect_starts(const std::vector<size_t>& sizes) {
  const BlockOffsets offsets(sizes);
  size_t start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(offsets[i], start) << "block " << i << " of " << sizes.size();
    start += sizes[i];
  }
  EXPECT_EQ(offsets[sizes.size()], start) << "the total after " << sizes.size() << " blocks";
}

TEST(BlockOffsets, StartsAndTotalInlineAndOnTheHeap) {
  for (size_t blocks : {0, 1, 2, 3, 15, 16, 17, 40}) {
    std::vector<size_t> sizes(blocks);
    for (size_t i = 0; i < blocks; ++i) sizes[i] = (i * 37 + 5) % 11;  // uneven, some empty
    expect_starts(sizes);
  }
}

TEST(BlockOffsets, TwoOfThemStayApart) {
  // alltoallv keeps one for its sends and one for its receives side by side.
  const std::vector<size_t> send{8, 0, 24}, recv{1, 2, 3};
  const AlltoallOffsets at{BlockOffsets(send), BlockOffsets(recv)};
  EXPECT_EQ(at.send[1], 8u);
  EXPECT_EQ(at.send[3], 32u);
  EXPECT_EQ(at.recv[2], 3u);
  EXPECT_EQ(at.recv[3], 6u);
}

}  // namespace
}  // namespace kolo::comm::detail
