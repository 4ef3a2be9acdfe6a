// broadcast: every root on 1..6 ranks, sizes from empty to several pipeline segments; the chain
// forced the same way, and where the automatic choice turns to it.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "base/errors.h"
#include "comm/broadcast_choice.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"

namespace kolo::comm {
namespace {

using testing::RankThreads;

class Broadcast : public ::testing::TestWithParam<int> {};

using BroadcastFunction = void (*)(Communicator&, Bytes, int);

void check_every_root_every_size(int n, BroadcastFunction run_broadcast) {
  RankThreads group(n);
  for (int root = 0; root < n; ++root) {
    for (size_t size : {size_t{0}, size_t{1}, size_t{1000}, kBroadcastChunkBytes,
                        size_t{3 * kBroadcastChunkBytes + 17}}) {
      group.run([&](Communicator& comm) {
        std::vector<std::byte> data(size);
        for (size_t i = 0; i < size; ++i) {
          data[i] =
              comm.rank() == root ? std::byte(static_cast<uint8_t>(i * 13 + root)) : std::byte{0};
        }
        run_broadcast(comm, data, root);
        for (size_t i = 0; i < size; ++i) {
          if (data[i] != std::byte(static_cast<uint8_t>(i * 13 + root))) {
            ADD_FAILURE() << "rank " << comm.rank() << " root " << root << " size " << size
                          << ": wrong byte at " << i;
            break;
          }
        }
      });
    }
  }
}

TEST_P(Broadcast, EveryRootEverySize) { check_every_root_every_size(GetParam(), broadcast); }

TEST_P(Broadcast, ChainEveryRootEverySize) {
  check_every_root_every_size(GetParam(), broadcast_chain);
}

TEST_P(Broadcast, ScatterAllgatherEveryRootEverySize) {
  check_every_root_every_size(GetParam(), broadcast_scatter_allgather);
}

INSTANTIATE_TEST_SUITE_P(Sizes, Broadcast, ::testing::Range(1, 7));

// 8 and 11 ranks: a full binomial scatter and one with missing subtrees; sizes below the rank
// count (empty blocks) and uneven blocks.
TEST(BroadcastScatterAllgather, LargerGroupsAndEmptyBlocks) {
  for (int n : {8, 11}) {
    RankThreads group(n);
    for (int root : {0, 3, n - 1}) {
      for (size_t size : {size_t{1}, size_t{5}, static_cast<size_t>(n) * 1000 + 7}) {
        group.run([&](Communicator& comm) {
          std::vector<std::byte> data(size, std::byte{0});
          if (comm.rank() == root) {
            for (size_t i = 0; i < size; ++i) data[i] = std::byte(static_cast<uint8_t>(i * 31));
          }
          broadcast_scatter_allgather(comm, data, root);
          for (size_t i = 0; i < size; ++i) {
            if (data[i] != std::byte(static_cast<uint8_t>(i * 31))) {
              ADD_FAILURE() << n << " ranks, root " << root << ", size " << size << ", rank "
                            << comm.rank() << ": wrong byte at " << i;
              break;
            }
          }
        });
      }
    }
  }
}

TEST(BroadcastScatterAllgatherLimit, FromEightRanksBelowTheChain) {
  for (int ranks = 1; ranks < 8; ++ranks) {
    EXPECT_EQ(broadcast_scatter_allgather_limit(ranks), std::numeric_limits<size_t>::max());
  }
  // Within one segment: 7 x 128 KiB / (2 x 3 - 1 - 1.75).
  EXPECT_EQ(broadcast_scatter_allgather_limit(8), size_t{282309});
  // Beyond: (63 x 128 KiB - 5 x 512 KiB) / (6 - 1.96875), and (255 x 128 KiB - 7 x 512 KiB) /
  // (8 - 1.9921875); the same figures as tests/python/test_scaling_collectives.py.
  EXPECT_EQ(broadcast_scatter_allgather_limit(64), size_t{1398102});
  EXPECT_EQ(broadcast_scatter_allgather_limit(256), size_t{4952443});
  for (int ranks = 8; ranks <= 1024; ++ranks) {
    EXPECT_LT(broadcast_scatter_allgather_limit(ranks), broadcast_chain_limit(ranks)) << ranks;
  }
}

// On 8 ranks the automatic choice takes all three between hosts: tree, scatter + allgather, chain,
// each on every rank alike, on both sides of both limits.
TEST(BroadcastChoice, EightRanksTreeScatterAllgatherAndChain) {
  RankThreads group(8);
  const size_t sizes[] = {1000, broadcast_scatter_allgather_limit(8) - 1,
                          broadcast_scatter_allgather_limit(8) + 13, broadcast_chain_limit(8) - 1,
                          broadcast_chain_limit(8) + 5};
  for (size_t size : sizes) {
    group.run([&](Communicator& comm) {
      std::vector<std::byte> data(size, comm.rank() == 5 ? std::byte{3} : std::byte{0});
      broadcast(comm, data, 5);
      EXPECT_EQ(std::count(data.begin(), data.end(), std::byte{3}), static_cast<long>(size));
    });
  }
}

TEST(BroadcastChainLimit, NeverOnTwoRanksAndGrowingWithTheGroup) {
  EXPECT_EQ(broadcast_chain_limit(1), std::numeric_limits<size_t>::max());
  EXPECT_EQ(broadcast_chain_limit(2), std::numeric_limits<size_t>::max());
  // Below 8 ranks: (ranks - 2) MiB over (ceil(log2 ranks) - 1) levels the chain saves.
  EXPECT_EQ(broadcast_chain_limit(3), size_t{1} << 20);
  EXPECT_EQ(broadcast_chain_limit(7), size_t{5} << 19);
  // From 8, against scatter + allgather: ranks - 1 chunks.
  EXPECT_EQ(broadcast_chain_limit(8), 7 * kBroadcastChunkBytes);
  EXPECT_EQ(broadcast_chain_limit(256), 255 * kBroadcastChunkBytes);
  // It grows with the group, dropping below 8 ranks only where the tree gets one more level (past
  // a power of two), which the chain saves too.
  for (int ranks = 4; ranks <= 1024; ++ranks) {
    const bool new_level = ((ranks - 1) & (ranks - 2)) == 0;
    if (!new_level) {
      EXPECT_GT(broadcast_chain_limit(ranks), broadcast_chain_limit(ranks - 1)) << ranks;
    }
    EXPECT_GE(broadcast_chain_limit(ranks), size_t{1} << 20) << ranks;
  }
}

// Above the limit the automatic choice is the chain on every rank alike: a group of 3 (no arena
// between RankThreads) broadcasting 3 MiB from each root, back to back with a small (tree)
// broadcast, so a rank that chose differently would mismatch its peer's transfers.
TEST(BroadcastChoice, ChainAboveTheLimitTreeBelowOnEveryRank) {
  RankThreads group(3);
  const size_t large = broadcast_chain_limit(3) * 3;
  for (int root = 0; root < 3; ++root) {
    group.run([&](Communicator& comm) {
      std::vector<std::byte> big(large, comm.rank() == root ? std::byte{7} : std::byte{0});
      std::vector<std::byte> small(100, comm.rank() == root ? std::byte{9} : std::byte{0});
      broadcast(comm, big, root);
      broadcast(comm, small, root);
      EXPECT_EQ(std::count(big.begin(), big.end(), std::byte{7}), static_cast<long>(large));
      EXPECT_EQ(std::count(small.begin(), small.end(), std::byte{9}), 100);
    });
  }
}

TEST(BroadcastArguments, RootOutsideGroup) {
  RankThreads group(2);
  std::vector<std::byte> data(4);
  EXPECT_THROW(broadcast(group.comm(0), data, 2), InvalidArgument);
  EXPECT_THROW(broadcast(group.comm(0), data, -1), InvalidArgument);
}

}  // namespace
}  // namespace kolo::comm
