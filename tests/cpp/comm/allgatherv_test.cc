// allgatherv: uneven, empty and large blocks on 1..6 ranks; recursive doubling forced on 1..9, 12
// and 16 ranks (powers of two and not) and Bruck's algorithm on 1..9, 11, 12 and 13, in place
// too; where the automatic choice turns to each.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "base/errors.h"
#include "comm/allgather_choice.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"

namespace kolo::comm {
namespace {

using testing::RankThreads;

std::byte byte_of(int rank, size_t i) {
  return std::byte(static_cast<uint8_t>(rank * 131 + i * 7 + i / 251));
}

using AllgathervFunction = void (*)(Communicator&, ConstBytes, Bytes, std::span<const size_t>);

void check_allgatherv(RankThreads& group, const std::vector<size_t>& sizes,
                      AllgathervFunction run_allgatherv = allgatherv, bool in_place = false) {
  const size_t total = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
  std::vector<std::byte> expected;
  for (int r = 0; r < group.size(); ++r) {
    for (size_t i = 0; i < sizes[r]; ++i) expected.push_back(byte_of(r, i));
  }
  group.run([&](Communicator& comm) {
    std::vector<std::byte> mine(sizes[comm.rank()]);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = byte_of(comm.rank(), i);
    std::vector<std::byte> out(total, std::byte{0xee});
    if (in_place) {
      const size_t offset = std::accumulate(sizes.begin(), sizes.begin() + comm.rank(), size_t{0});
      std::copy(mine.begin(), mine.end(), out.begin() + static_cast<std::ptrdiff_t>(offset));
      run_allgatherv(comm, Bytes(out).subspan(offset, mine.size()), out, sizes);
    } else {
      run_allgatherv(comm, mine, out, sizes);
    }
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

class AllgathervDoubling : public ::testing::TestWithParam<int> {};

TEST_P(AllgathervDoubling, UnevenEmptyAndInPlaceBlocks) {
  const int n = GetParam();
  RankThreads group(n);
  std::vector<size_t> uneven, zeros(n, 0), one_large(n, 0), lone(n, 0);
  for (int r = 0; r < n; ++r) uneven.push_back(static_cast<size_t>(r * 37 % 11) * 13);
  one_large[n - 1] = (1u << 20) + 3;
  if (n > 1) one_large[0] = 5;
  lone[0] = 9;  // an extra rank's block (rank 0 sits out of the core when n is no power of two)
  for (const auto& sizes : {uneven, zeros, one_large, lone}) {
    check_allgatherv(group, sizes, allgatherv_doubling);
    check_allgatherv(group, sizes, allgatherv_doubling, /*in_place=*/true);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, AllgathervDoubling,
                         ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16));

class AllgathervBruck : public ::testing::TestWithParam<int> {};

TEST_P(AllgathervBruck, UnevenEmptyWrappedAndInPlaceBlocks) {
  const int n = GetParam();
  RankThreads group(n);
  std::vector<size_t> uneven, zeros(n, 0), one_large(n, 0), first(n, 0), last(n, 0);
  for (int r = 0; r < n; ++r) uneven.push_back(static_cast<size_t>(r * 37 % 11) * 13);
  one_large[n - 1] = (1u << 20) + 3;  // across the wrap for every rank but the last
  if (n > 1) one_large[0] = 5;
  first[0] = 9;
  last[n - 1] = 7;
  for (const auto& sizes : {uneven, zeros, one_large, first, last}) {
    check_allgatherv(group, sizes, allgatherv_bruck);
    check_allgatherv(group, sizes, allgatherv_bruck, /*in_place=*/true);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, AllgathervBruck,
                         ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13));

TEST(AllgatherDoublingChoice, PowersOfTwoFromFourBelowTheLimit) {
  for (int ranks : {1, 2, 3, 5, 6, 7, 12, 255}) {
    EXPECT_FALSE(allgather_doubling_serves(ranks, 64)) << ranks;
  }
  for (int ranks : {4, 8, 16, 256}) EXPECT_TRUE(allgather_doubling_serves(ranks, 64)) << ranks;
  EXPECT_TRUE(allgather_doubling_serves(8, kAllgatherDoublingMaxBytes));
  EXPECT_FALSE(allgather_doubling_serves(8, kAllgatherDoublingMaxBytes + 1));
}

TEST(AllgatherBruckChoice, OtherSizesFromFiveBelowTheLimit) {
  for (int ranks : {1, 2, 3, 4, 8, 16, 256}) {
    EXPECT_FALSE(allgather_bruck_serves(ranks, 64)) << ranks;
  }
  for (int ranks : {5, 6, 7, 9, 12, 255}) EXPECT_TRUE(allgather_bruck_serves(ranks, 64)) << ranks;
  EXPECT_TRUE(allgather_bruck_serves(6, kAllgatherDoublingMaxBytes));
  EXPECT_FALSE(allgather_bruck_serves(6, kAllgatherDoublingMaxBytes + 1));
}

// The automatic choice on 8 ranks (no arena between RankThreads) on both sides of the limit, and
// uneven blocks whose total only the sum of every rank's size tells: every rank must choose
// alike or the transfers mismatch.
TEST(AllgatherDoublingChoice, AutomaticOnBothSidesOfTheLimit) {
  RankThreads group(8);
  std::vector<size_t> small(8, 100), large(8, kAllgatherDoublingMaxBytes / 8);
  large[3] += 1;
  check_allgatherv(group, small);
  check_allgatherv(group, large);
}

// The same on 5, 6 and 7 ranks, where Bruck's algorithm serves below the limit (the ring above),
// and on 3, where the ring serves at every size.
TEST(AllgatherBruckChoice, AutomaticOnBothSidesOfTheLimit) {
  for (int n : {3, 5, 6, 7}) {
    RankThreads group(n);
    std::vector<size_t> small(n, 100), at_limit(n, kAllgatherDoublingMaxBytes / n), above(n);
    at_limit[0] += kAllgatherDoublingMaxBytes % n;  // exactly the limit: Bruck
    above = at_limit;
    above[n - 1] += 1;  // one byte more, on one rank's block only: the ring
    small[1] = 0;
    check_allgatherv(group, small);
    check_allgatherv(group, at_limit);
    check_allgatherv(group, above);
  }
}

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
