// broadcast: every root on 1..6 ranks, sizes from empty to several pipeline segments.
#include <gtest/gtest.h>

#include "base/errors.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"

namespace kolo::comm {
namespace {

using testing::RankThreads;

class Broadcast : public ::testing::TestWithParam<int> {};

TEST_P(Broadcast, EveryRootEverySize) {
  const int n = GetParam();
  RankThreads group(n);
  for (int root = 0; root < n; ++root) {
    for (size_t size : {size_t{0}, size_t{1}, size_t{1000}, size_t{3 * 512 * 1024 + 17}}) {
      group.run([&](Communicator& comm) {
        std::vector<std::byte> data(size);
        for (size_t i = 0; i < size; ++i) {
          data[i] =
              comm.rank() == root ? std::byte(static_cast<uint8_t>(i * 13 + root)) : std::byte{0};
        }
        broadcast(comm, data, root);
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

INSTANTIATE_TEST_SUITE_P(Sizes, Broadcast, ::testing::Range(1, 7));

TEST(BroadcastArguments, RootOutsideGroup) {
  RankThreads group(2);
  std::vector<std::byte> data(4);
  EXPECT_THROW(broadcast(group.comm(0), data, 2), InvalidArgument);
  EXPECT_THROW(broadcast(group.comm(0), data, -1), InvalidArgument);
}

}  // namespace
}  // namespace kolo::comm
