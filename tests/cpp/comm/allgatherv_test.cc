// allgatherv: uneven, empty and large blocks on 1..6 ranks.
#include <gtest/gtest.h>

#include <numeric>

#include "base/errors.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"

namespace kolo::comm {
namespace {

using testing::RankThreads;

std::byte byte_of(int rank, size_t i) {
  return std::byte(static_cast<uint8_t>(rank * 131 + i * 7 + i / 251));
}

void check_allgatherv(RankThreads& group, const std::vector<size_t>& sizes) {
  const size_t total = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
  std::vector<std::byte> expected;
  for (int r = 0; r < group.size(); ++r) {
    for (size_t i = 0; i < sizes[r]; ++i) expected.push_back(byte_of(r, i));
  }
  group.run([&](Communicator& comm) {
    std::vector<std::byte> mine(sizes[comm.rank()]);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = byte_of(comm.rank(), i);
    std::vector<std::byte> out(total, std::byte{0xee});
    allgatherv(comm, mine, out, sizes);
    EXPECT_TRUE(out == expected) << "rank " << comm.rank();
  });
}

class Allgatherv : public ::testing::TestWithParam<int> {};

TEST_P(Allgatherv, UnevenEmptyAndLargeBlocks) {
  const int n = GetParam();
  RankThreads group(n);
  std::vector<size_t> uneven, zeros(n, 0), one_large(n, 0), equal(n, 4096);
  for (int r = 0; r < n; ++r) uneven.push_back(static_cast<size_t>(r * 37 % 11) * 13);
  one_large[n - 1] = (1u << 20) + 3;
  if (n > 1) one_large[0] = 5;
  for (const auto& sizes : {uneven, zeros, one_large, equal}) check_allgatherv(group, sizes);
}

INSTANTIATE_TEST_SUITE_P(Sizes, Allgatherv, ::testing::Range(1, 7));

TEST(AllgathervArguments, Mismatches) {
  RankThreads group(2);
  std::vector<std::byte> mine(4), out(8);
  const std::vector<size_t> three = {4, 4, 4}, sizes = {4, 4}, other = {3, 4};
  EXPECT_THROW(allgatherv(group.comm(0), mine, out, three), InvalidArgument);
  EXPECT_THROW(allgatherv(group.comm(0), mine, out, other), InvalidArgument);
  std::vector<std::byte> small(7);
  EXPECT_THROW(allgatherv(group.comm(0), mine, small, sizes), InvalidArgument);
}

}  // namespace
}  // namespace kolo::comm
