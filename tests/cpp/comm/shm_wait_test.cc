// A rank sleeping on several shared-memory links at once: its waits issue one wait fence each
// (transport/wait_fence.h), not one per link; tiny messages from several writers at once, sent
// just as the receiver arms its links, always wake it (with the fence and with the full-barrier
// fallback); and a peer that dies or stops while a wait covers several links is named.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <tuple>
#include <vector>

#include "base/errors.h"
#include "comm/communicator.h"
#include "comm/rank_threads.h"
#include "transport/wait_fence.h"

namespace kolo::comm {
namespace {

using namespace std::chrono_literals;
using testing::LinkKind;
using testing::RankThreads;

TEST(ShmWait, IdleWaitOnSeveralLinksIssuesOneFence) {
  if (!transport::join_wait_fences()) GTEST_SKIP() << "membarrier is not available";
  RankThreads group(4, LinkKind::shm);
  Communicator& comm = group.comm(0);  // three shm links, nothing sent on any
  for (uint64_t wait = 1; wait <= 3; ++wait) {
    comm.wait_idle(/*wake_fd=*/-1, 2ms);  // arms three links, sleeps once until the timeout
    EXPECT_EQ(comm.wait_fences(), wait) << "one fence per wait, not one per link";
  }
}

TEST(ShmWait, FallbackIdleWaitIssuesNoFence) {
  RankThreads group(4, LinkKind::shm_full_barriers);
  group.comm(0).wait_idle(/*wake_fd=*/-1, 2ms);
  EXPECT_EQ(group.comm(0).wait_fences(), 0u);
}

// Each round one rank receives an 8-byte message from every other rank at once; the senders
// pause first (longest every 8th round) so that the receiver has gone to sleep in poll(2) on all
// its links, or is arming them, when the messages land. A lost wake-up fails the round with
// "no progress" after the peer timeout.
class ConcurrentWriters : public ::testing::TestWithParam<std::tuple<LinkKind, int>> {};

TEST_P(ConcurrentWriters, EveryReceiverWakesForMessagesOnSeveralLinks) {
  const auto [kind, n] = GetParam();
  CommunicatorOptions options = testing::default_test_options();
  options.spin_before_poll = 0us;  // sleep as soon as nothing moves
  RankThreads group(n, kind, 4096, options);
  constexpr int kRounds = 400;
  group.run([&](Communicator& comm) {
    for (int round = 0; round < kRounds; ++round) {
      const int receiver = round % comm.size();
      if (comm.rank() != receiver) {
        std::this_thread::sleep_for(round % 8 == 0 ? 2ms : std::chrono::microseconds(round % 5));
        const uint64_t message = static_cast<uint64_t>(round) * 100 + comm.rank();
        comm.send(receiver, std::as_bytes(std::span(&message, 1)));
        continue;
      }
      std::vector<uint64_t> got(static_cast<size_t>(comm.size()), 0);
      std::vector<RecvOp> recvs;
      for (int p = 0; p < comm.size(); ++p) {
        if (p != receiver) recvs.push_back({p, std::as_writable_bytes(std::span(&got[p], 1))});
      }
      comm.exchange({}, recvs);
      for (int p = 0; p < comm.size(); ++p) {
        if (p != receiver) {
          ASSERT_EQ(got[p], static_cast<uint64_t>(round) * 100 + p) << "round " << round;
        }
      }
    }
  });
  uint64_t fences = 0;
  for (int r = 0; r < n; ++r) fences += group.comm(r).wait_fences();
  if (kind == LinkKind::shm_full_barriers) {
    EXPECT_EQ(fences, 0u);
  } else if (transport::join_wait_fences()) {
    EXPECT_GT(fences, 0u) << "no receiver ever slept: the test did not exercise the fence";
  }
}

INSTANTIATE_TEST_SUITE_P(FencesAndRanks, ConcurrentWriters,
                         ::testing::Combine(::testing::Values(LinkKind::shm,
                                                              LinkKind::shm_full_barriers),
                                            ::testing::Values(3, 4)));

// Rank 0 waits for a message from each of ranks 1-3; ranks 1 and 2 send theirs, rank 3 dies
// (its links close, as when a process is killed) or stops (links open, silent) instead.
class PeerLostDuringWait : public ::testing::TestWithParam<LinkKind> {};

void wait_for_three(Communicator& comm, bool rank3_dies) {
  uint64_t message = 7;
  if (comm.rank() == 0) {
    std::vector<uint64_t> got(3);
    const RecvOp recvs[] = {{1, std::as_writable_bytes(std::span(&got[0], 1))},
                            {2, std::as_writable_bytes(std::span(&got[1], 1))},
                            {3, std::as_writable_bytes(std::span(&got[2], 1))}};
    comm.exchange({}, recvs);
  } else if (comm.rank() < 3) {
    comm.send(0, std::as_bytes(std::span(&message, 1)));
  } else {
    std::this_thread::sleep_for(200ms);  // rank 0 sleeps on all three links by now
    if (rank3_dies) comm.abort();
  }
}

TEST_P(PeerLostDuringWait, DeadPeerIsNamedAtOnce) {
  RankThreads group(4, GetParam());
  const auto start = std::chrono::steady_clock::now();
  const auto errors = group.run_collect([](Communicator& comm) { wait_for_three(comm, true); });
  ASSERT_TRUE(errors[0]) << "rank 0 did not notice rank 3 dying";
  EXPECT_EQ(testing::peer_of(errors[0]), 3) << testing::describe(errors[0]);
  EXPECT_LT(testing::seconds_since(start), 10.0);  // far below the 20 s peer timeout
}

TEST_P(PeerLostDuringWait, SilentPeerIsNamedAfterThePeerTimeout) {
  CommunicatorOptions options = testing::default_test_options();
  options.peer_timeout = 500ms;
  RankThreads group(4, GetParam(), 4096, options);
  const auto errors = group.run_collect([](Communicator& comm) { wait_for_three(comm, false); },
                                        /*abort_on_error=*/false);
  ASSERT_TRUE(errors[0]);
  EXPECT_EQ(testing::peer_of(errors[0]), 3) << testing::describe(errors[0]);
  EXPECT_NE(testing::describe(errors[0]).find("no progress"), std::string::npos)
      << testing::describe(errors[0]);
  for (int r = 1; r < 4; ++r) EXPECT_FALSE(errors[r]) << testing::describe(errors[r]);
}

INSTANTIATE_TEST_SUITE_P(Fences, PeerLostDuringWait,
                         ::testing::Values(LinkKind::shm, LinkKind::shm_full_barriers));

}  // namespace
}  // namespace kolo::comm
