#include "bootstrap/world.h"

#include <gtest/gtest.h>

namespace kolo::bootstrap {
namespace {

TEST(World, SingleHost) {
  WorldInfo world = WorldInfo::from_hostnames(2, {"a", "a", "a"});
  EXPECT_EQ(world.local_rank, 2);
  EXPECT_EQ(world.local_size, 3);
  EXPECT_EQ(world.cross_rank, 0);
  EXPECT_EQ(world.cross_size, 1);
  EXPECT_EQ(world.topology.num_hosts(), 1);
}

TEST(World, TwoHostsTwoSlotsEach) {
  // horovodrun -np 4 -H a:2,b:2
  const std::vector<std::string> hosts = {"a", "a", "b", "b"};
  const int expected_local[] = {0, 1, 0, 1};
  const int expected_cross[] = {0, 0, 1, 1};
  for (int rank = 0; rank < 4; ++rank) {
    WorldInfo world = WorldInfo::from_hostnames(rank, hosts);
    EXPECT_EQ(world.local_rank, expected_local[rank]) << rank;
    EXPECT_EQ(world.local_size, 2);
    EXPECT_EQ(world.cross_rank, expected_cross[rank]) << rank;
    EXPECT_EQ(world.cross_size, 2);
    EXPECT_EQ(world.topology.host_of_rank[rank], expected_cross[rank]);
  }
}

TEST(World, UnevenHostsAndInterleavedRanks) {
  // -np 3 -H a:2,b:2 gives a, a, b; interleaved placements also work.
  WorldInfo third = WorldInfo::from_hostnames(2, {"a", "a", "b"});
  EXPECT_EQ(third.local_rank, 0);
  EXPECT_EQ(third.local_size, 1);
  EXPECT_EQ(third.cross_rank, 1);
  EXPECT_EQ(third.cross_size, 2);
  WorldInfo second = WorldInfo::from_hostnames(1, {"a", "a", "b"});
  EXPECT_EQ(second.local_rank, 1);
  EXPECT_EQ(second.cross_rank, 0);
  EXPECT_EQ(second.cross_size, 1);  // only host a has a local rank 1

  WorldInfo interleaved = WorldInfo::from_hostnames(3, {"a", "b", "a", "b"});
  EXPECT_EQ(interleaved.local_rank, 1);
  EXPECT_EQ(interleaved.cross_rank, 1);
  EXPECT_EQ(interleaved.topology.host_of_rank[3], 1);
}

}  // namespace
}  // namespace kolo::bootstrap
