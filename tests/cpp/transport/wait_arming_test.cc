// transport::WaitArming over several shared-memory links: one wait fence per wait however many
// links it arms, none when a link is ready already or when the links use the full-barrier
// fallback, and input on any one link is seen by the check after the fence.
#include "transport/wait_arming.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <array>
#include <vector>

#include "transport/shm_test_support.h"
#include "transport/wait_fence.h"

namespace kolo::transport {
namespace {

using shm::ShmFences;
using testing::shm_link_pair;
using testing::ShmLinkPair;

constexpr size_t kLinks = 3;

// A receiver's three links (the b ends) and their senders (the a ends).
std::array<ShmLinkPair, kLinks> three_pairs(ShmFences fences) {
  return {shm_link_pair(4096, fences), shm_link_pair(4096, fences), shm_link_pair(4096, fences)};
}

// Arms every receiving end; returns each arm()'s events.
std::vector<int> arm_all(WaitArming& arming, std::array<ShmLinkPair, kLinks>& pairs) {
  arming.begin();
  std::vector<int> events;
  for (auto& pair : pairs) events.push_back(arming.arm(*pair.b, false, true));
  return events;
}

void send_tiny(Link& link) {
  const std::byte tiny[8] = {};
  ASSERT_EQ(link.send_some(tiny), sizeof(tiny));
}

class WaitArmingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!join_wait_fences()) GTEST_SKIP() << "membarrier is not available: no wait fences";
  }
};

TEST_F(WaitArmingTest, OneFenceForAWaitOnSeveralShmLinks) {
  auto pairs = three_pairs(ShmFences::wait_fence_if_available);
  WaitArming arming;
  for (int wait = 1; wait <= 3; ++wait) {
    for (int events : arm_all(arming, pairs)) EXPECT_EQ(events, POLLIN);
    EXPECT_FALSE(arming.settle()) << "nothing was sent: the caller may sleep";
    EXPECT_EQ(arming.fences(), static_cast<uint64_t>(wait)) << "one fence per wait, not per link";
  }
}

TEST_F(WaitArmingTest, TinyInputOnAnyLinkIsSeenAfterTheOneFence) {
  for (size_t with_input = 0; with_input < kLinks; ++with_input) {
    auto pairs = three_pairs(ShmFences::wait_fence_if_available);
    send_tiny(*pairs[with_input].a);  // into the fast box: only the check after the fence sees it
    WaitArming arming;
    for (int events : arm_all(arming, pairs)) EXPECT_GE(events, 0);
    EXPECT_TRUE(arming.settle()) << "input on link " << with_input;
    EXPECT_EQ(arming.fences(), 1u);
    std::byte in[8];
    EXPECT_EQ(pairs[with_input].b->recv_some(in), sizeof(in));
  }
}

TEST_F(WaitArmingTest, NoFenceWhenALinkIsReadyAlready) {
  auto pairs = three_pairs(ShmFences::wait_fence_if_available);
  const std::vector<std::byte> large(1000);  // through the byte ring, seen when arming
  ASSERT_EQ(pairs[1].a->send_some(large), large.size());
  WaitArming arming;
  const auto events = arm_all(arming, pairs);
  EXPECT_LT(events[1], 0);
  EXPECT_TRUE(arming.settle());
  EXPECT_EQ(arming.fences(), 0u) << "no sleep follows: no fence needed";
}

TEST(WaitArmingFallback, FullBarrierLinksNeedNoFenceAndSeeTinyInput) {
  auto pairs = three_pairs(ShmFences::full_barriers);
  WaitArming arming;
  for (int events : arm_all(arming, pairs)) EXPECT_EQ(events, POLLIN);
  EXPECT_FALSE(arming.settle());
  send_tiny(*pairs[2].a);
  const auto events = arm_all(arming, pairs);
  EXPECT_LT(events[2], 0) << "the fallback looks at the fast box right after arming";
  EXPECT_TRUE(arming.settle());
  EXPECT_EQ(arming.fences(), 0u);
}

TEST(WaitArmingSockets, SocketLinksNeedNoFence) {
  auto mesh = testing::socket_mesh(3);
  WaitArming arming;
  arming.begin();
  EXPECT_EQ(arming.arm(*mesh[0][1], true, true), POLLIN | POLLOUT);
  EXPECT_EQ(arming.arm(*mesh[0][2], false, true), POLLIN);
  EXPECT_FALSE(arming.settle());
  EXPECT_EQ(arming.fences(), 0u);
}

}  // namespace
}  // namespace kolo::transport
