// gather_frames / broadcast_frame: every root, frames of different sizes (empty, coalesced,
// large), and frames over the receiver's limit.
#include <gtest/gtest.h>

#include "base/errors.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"

namespace kolo::comm {
namespace {

using testing::RankThreads;

std::vector<std::byte> frame_of(int rank, size_t size) {
  std::vector<std::byte> frame(size);
  for (size_t i = 0; i < size; ++i) frame[i] = std::byte(static_cast<uint8_t>(rank + i * 3));
  return frame;
}

size_t frame_size(int rank) {
  static constexpr size_t kSizes[] = {0, 10, 5000, 200000, 1, 4096};
  return kSizes[rank % 6];
}

class Frames : public ::testing::TestWithParam<int> {};

TEST_P(Frames, GatherToEveryRoot) {
  const int n = GetParam();
  RankThreads group(n);
  for (int root = 0; root < n; ++root) {
    group.run([&](Communicator& comm) {
      const auto frames = gather_frames(comm, frame_of(comm.rank(), frame_size(comm.rank())), root);
      if (comm.rank() != root) {
        EXPECT_TRUE(frames.empty());
        return;
      }
      ASSERT_EQ(frames.size(), static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) EXPECT_TRUE(frames[r] == frame_of(r, frame_size(r))) << r;
    });
  }
}

TEST_P(Frames, BroadcastFromEveryRoot) {
  const int n = GetParam();
  RankThreads group(n);
  for (int root = 0; root < n; ++root) {
    for (size_t size : {size_t{0}, size_t{17}, size_t{300000}}) {
      group.run([&](Communicator& comm) {
        std::vector<std::byte> input;
        if (comm.rank() == root)
          input = frame_of(root, size);
        else
          input.assign(3, std::byte{1});  // ignored off the root
        const auto frame = broadcast_frame(comm, std::move(input), root);
        EXPECT_TRUE(frame == frame_of(root, size)) << "rank " << comm.rank() << " root " << root;
      });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, Frames, ::testing::Range(1, 7));

TEST(FramesLimit, GatheredFrameOverRootLimit) {
  std::vector<CommunicatorOptions> options(3, testing::default_test_options());
  options[0].frame_limit = 1000;
  RankThreads group(options);
  const auto errors = group.run_collect([&](Communicator& comm) {
    gather_frames(comm, frame_of(comm.rank(), comm.rank() == 2 ? 2000 : 10), 0);
  });
  ASSERT_TRUE(errors[0]);
  EXPECT_THROW(std::rethrow_exception(errors[0]), ProtocolError);
  EXPECT_NE(testing::describe(errors[0]).find("rank 2"), std::string::npos)
      << testing::describe(errors[0]);
}

TEST(FramesLimit, BroadcastFrameOverReceiverLimit) {
  std::vector<CommunicatorOptions> options(3, testing::default_test_options());
  options[2].frame_limit = 1000;
  RankThreads group(options);
  const auto errors =
      group.run_collect([&](Communicator& comm) { broadcast_frame(comm, frame_of(0, 5000), 0); });
  ASSERT_TRUE(errors[2]);
  EXPECT_THROW(std::rethrow_exception(errors[2]), ProtocolError);
}

}  // namespace
}  // namespace kolo::comm
