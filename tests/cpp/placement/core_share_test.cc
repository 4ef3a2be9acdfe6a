#include "placement/core_share.h"

#include <gtest/gtest.h>

#include <set>

#include "base/errors.h"

namespace kolo::placement {
namespace {

// CPUs without hyperthreads: each its own core.
std::vector<Cpu> plain(const std::vector<int>& ids) {
  std::vector<Cpu> cpus;
  for (int id : ids) cpus.push_back(Cpu{id, id});
  return cpus;
}

std::vector<int> share_of(const std::vector<Cpu>& cpus, int rank, int size) {
  return share_for_local_rank(cpus, rank, size).cpus;
}

TEST(CoreShare, EvenSplitOfAContiguousMask) {
  const auto cpus = plain({0, 1, 2, 3});
  EXPECT_EQ(share_of(cpus, 0, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(share_of(cpus, 1, 2), (std::vector<int>{2, 3}));
  const Share one = share_for_local_rank(cpus, 1, 2);
  EXPECT_TRUE(one.bound);
  EXPECT_EQ(one.threads, 2);
}

TEST(CoreShare, UnevenSplitGivesTheFirstRanksOneMore) {
  const auto cpus = plain({0, 1, 2, 3, 4});
  EXPECT_EQ(share_of(cpus, 0, 3), (std::vector<int>{0, 1}));
  EXPECT_EQ(share_of(cpus, 1, 3), (std::vector<int>{2, 3}));
  EXPECT_EQ(share_of(cpus, 2, 3), (std::vector<int>{4}));
  EXPECT_EQ(share_for_local_rank(cpus, 2, 3).threads, 1);
}

// A cgroup's or taskset's mask with holes, in no particular order: shares follow CPU numbers.
TEST(CoreShare, MaskWithHolesInAnyOrder) {
  const auto cpus = plain({9, 2, 40, 5});
  EXPECT_EQ(share_of(cpus, 0, 2), (std::vector<int>{2, 5}));
  EXPECT_EQ(share_of(cpus, 1, 2), (std::vector<int>{9, 40}));
  EXPECT_EQ(share_of(cpus, 3, 4), (std::vector<int>{40}));
}

// Every CPU goes to exactly one rank, whatever the sizes.
TEST(CoreShare, SharesPartitionTheMask) {
  const auto cpus = plain({1, 3, 4, 6, 7, 8, 11});
  for (int size = 1; size <= 7; ++size) {
    std::multiset<int> seen;
    for (int rank = 0; rank < size; ++rank) {
      const Share share = share_for_local_rank(cpus, rank, size);
      EXPECT_TRUE(share.bound);
      EXPECT_FALSE(share.cpus.empty()) << "rank " << rank << " of " << size;
      seen.insert(share.cpus.begin(), share.cpus.end());
    }
    EXPECT_EQ(seen, (std::multiset<int>{1, 3, 4, 6, 7, 8, 11})) << size << " ranks";
  }
}

// Hyperthread siblings (0 and 4 on core 0, ...) stay together while there are enough cores.
TEST(CoreShare, HyperthreadSiblingsStayTogether) {
  const std::vector<Cpu> cpus{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 0}, {5, 1}, {6, 2}, {7, 3}};
  EXPECT_EQ(share_of(cpus, 0, 2), (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(share_of(cpus, 1, 2), (std::vector<int>{2, 3, 6, 7}));
  EXPECT_EQ(share_for_local_rank(cpus, 1, 2).threads, 2);  // physical cores
  EXPECT_EQ(share_of(cpus, 3, 4), (std::vector<int>{3, 7}));
}

// More ranks than cores but not than CPUs: hyperthreads are split, siblings next to each other.
TEST(CoreShare, MoreRanksThanCoresSplitsHyperthreads) {
  const std::vector<Cpu> cpus{{0, 0}, {1, 1}, {2, 0}, {3, 1}};
  EXPECT_EQ(share_of(cpus, 0, 4), (std::vector<int>{0}));
  EXPECT_EQ(share_of(cpus, 1, 4), (std::vector<int>{2}));
  EXPECT_EQ(share_of(cpus, 2, 4), (std::vector<int>{1}));
  EXPECT_EQ(share_of(cpus, 3, 4), (std::vector<int>{3}));
  EXPECT_EQ(share_of(cpus, 0, 3), (std::vector<int>{0, 2}));
}

// More ranks than CPUs (np 3 on 2): nobody is bound, one thread each.
TEST(CoreShare, MoreRanksThanCpusBindsNobody) {
  const auto cpus = plain({0, 1});
  for (int rank = 0; rank < 3; ++rank) {
    const Share share = share_for_local_rank(cpus, rank, 3);
    EXPECT_FALSE(share.bound);
    EXPECT_EQ(share.cpus, (std::vector<int>{0, 1}));
    EXPECT_EQ(share.threads, 1);
  }
  EXPECT_FALSE(share_for_local_rank(plain({5}), 1, 2).bound);
}

TEST(CoreShare, OneRankTakesEverything) {
  const Share share = share_for_local_rank(plain({0, 1, 2}), 0, 1);
  EXPECT_EQ(share.cpus, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(share.threads, 3);
}

TEST(CoreShare, BadArgumentsAreRefused) {
  EXPECT_THROW(share_for_local_rank({}, 0, 1), InvalidArgument);
  EXPECT_THROW(share_for_local_rank(plain({0}), 2, 2), InvalidArgument);
  EXPECT_THROW(share_for_local_rank(plain({0}), -1, 2), InvalidArgument);
  EXPECT_THROW(share_for_local_rank(plain({0}), 0, 0), InvalidArgument);
}

}  // namespace
}  // namespace kolo::placement
