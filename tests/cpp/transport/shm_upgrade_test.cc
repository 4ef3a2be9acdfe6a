// The same-host handshake: ranks (threads here) joined by socket pairs upgrade to shared memory,
// the segments' names are gone from /dev/shm as soon as it returns, bytes flow both ways, and a
// too-small /dev/shm is reported with its size.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "transport/shm/upgrade.h"
#include "transport/shm_test_support.h"

namespace kolo::transport::shm {
namespace {

TEST(ShmUpgrade, SameHostPairsUpgradeAndLeaveNothingInDevShm) {
  const int n = 3;
  const std::string tag = "upgradetest" + std::to_string(::getpid());
  auto links = testing::socket_mesh(n);
  std::vector<int> upgraded(n, -1);
  std::vector<std::thread> threads;
  threads.reserve(n);
  const Logger logger(LogLevel::off);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      UpgradeOptions options;
      options.rank = r;
      options.job_tag = tag;
      options.ring_bytes = 4096;
      // Ranks 0 and 1 share a host; rank 2 is elsewhere and keeps its sockets.
      options.same_host = {r != 2, r != 2, r == 2};
      options.deadline = Deadline(std::chrono::seconds(20));
      upgraded[r] = upgrade_same_host_links(links[r], options, logger);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(upgraded, (std::vector<int>{1, 1, 0}));
  EXPECT_TRUE(testing::dev_shm_entries_with(tag).empty());
  EXPECT_NE(links[0][1]->peer_description().find("shared memory"), std::string::npos);
  EXPECT_EQ(links[0][2]->peer_description().find("shared memory"), std::string::npos);

  // Bytes flow both ways through the new link (small enough to fit the 4 KiB ring).
  const std::string hello = "hello over shm";
  ASSERT_EQ(links[0][1]->send_some(
                ConstBytes(reinterpret_cast<const std::byte*>(hello.data()), hello.size())),
            hello.size());
  std::string got(hello.size(), '\0');
  ASSERT_EQ(links[1][0]->recv_some(Bytes(reinterpret_cast<std::byte*>(got.data()), got.size())),
            hello.size());
  EXPECT_EQ(got, hello);
  EXPECT_FALSE(links[1][0]->has_pending_input());
}

TEST(ShmUpgrade, SmallDevShmWarningNamesTheSizes) {
  EXPECT_EQ(small_dev_shm_warning(64 << 20, 32 << 20, 8 << 20), "");
  const std::string warning = small_dev_shm_warning(64 << 20, 1 << 20, 8 << 20);
  EXPECT_NE(warning.find("64.0 MiB"), std::string::npos) << warning;
  EXPECT_NE(warning.find("1.0 MiB free"), std::string::npos) << warning;
  EXPECT_NE(warning.find("8.0 MiB needed"), std::string::npos) << warning;
  EXPECT_NE(warning.find("TCP"), std::string::npos) << warning;
}

}  // namespace
}  // namespace kolo::transport::shm
