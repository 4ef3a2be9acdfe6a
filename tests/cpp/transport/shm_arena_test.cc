// The host's collective arena: set up over socket pairs by the ranks of one host only (members in
// rank order, one shared mapping, no name left in /dev/shm), its flags and futex wake-up across
// mappings, and the launcher's removal of a job's leftover objects.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "transport/shm/arena_setup.h"
#include "transport/shm/job_names.h"
#include "transport/shm_test_support.h"

namespace kolo::transport::shm {
namespace {

using namespace std::chrono_literals;

TEST(HostArena, RanksOfOneHostShareOneArenaAndLeaveNothingBehind) {
  const int n = 4;
  const std::string tag = "arenatest" + std::to_string(::getpid());
  auto links = testing::socket_mesh(n);
  // Ranks 0, 1 and 3 share a host; rank 2 is alone on another.
  const std::vector<int> host = {0, 0, 1, 0};
  std::vector<std::optional<HostArena>> arenas(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  const Logger logger(LogLevel::off);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ArenaOptions options;
      options.rank = r;
      options.job_tag = tag;
      options.chunk_bytes = 8192;
      for (int p = 0; p < n; ++p) options.same_host.push_back(host[p] == host[r]);
      options.deadline = Deadline(20s);
      arenas[r] = setup_host_arena(links[r], options, logger);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_TRUE(testing::dev_shm_entries_with(tag).empty());
  EXPECT_FALSE(arenas[2].has_value());  // alone on its host
  for (int r : {0, 1, 3}) {
    ASSERT_TRUE(arenas[r].has_value()) << "rank " << r;
    EXPECT_EQ(arenas[r]->members, (std::vector<int>{0, 1, 3}));
    EXPECT_EQ(arenas[r]->arena->ranks(), 3);
  }
  EXPECT_EQ(arenas[0]->slot, 0);
  EXPECT_EQ(arenas[1]->slot, 1);
  EXPECT_EQ(arenas[3]->slot, 2);
  // One memory behind the three mappings: what slot 2 writes, slot 0 reads.
  std::memcpy(arenas[3]->arena->slot(2, 1), "from rank 3", 12);
  arenas[3]->arena->post(2, Arena::Flag::reduced, 7);
  EXPECT_STREQ(reinterpret_cast<const char*>(arenas[0]->arena->slot(2, 1)), "from rank 3");
  EXPECT_EQ(arenas[1]->arena->flag(2, Arena::Flag::reduced), 7u);
  EXPECT_EQ(arenas[1]->arena->flag(2, Arena::Flag::ready), 0u);
}

TEST(HostArena, PostWakesASleeperInAnotherMapping) {
  const std::string name = "/kolo-arenawake-" + std::to_string(::getpid());
  std::string why;
  auto mine = Arena::create(name, 2, 4096, why);
  ASSERT_TRUE(mine.has_value()) << why;
  Arena theirs = Arena::open(name, 2, 4096);
  Mapping::unlink(name);
  const auto start = std::chrono::steady_clock::now();
  std::thread sleeper([&] {
    while (theirs.flag(0, Arena::Flag::ready) < 1) {
      const uint32_t ticket = theirs.begin_sleep();
      if (theirs.flag(0, Arena::Flag::ready) < 1) theirs.sleep(ticket, 30s);
      theirs.end_sleep();
    }
  });
  std::this_thread::sleep_for(50ms);
  mine->post(0, Arena::Flag::ready, 1);
  sleeper.join();
  // Without the wake-up the sleeper would only return after its 30 s timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(HostArena, OpenRejectsAnArenaOfAnotherShape) {
  const std::string name = "/kolo-arenashape-" + std::to_string(::getpid());
  std::string why;
  auto created = Arena::create(name, 2, 4096, why);
  ASSERT_TRUE(created.has_value()) << why;
  EXPECT_THROW(Arena::open(name, 3, 4096), kolo::Error);
  Mapping::unlink(name);
  EXPECT_THROW(Arena::create(name, 2, 1000, why), kolo::InvalidArgument);
}

TEST(JobNames, TagIsStableHexAndDiffersBetweenSecrets) {
  const std::string tag = job_tag("00112233");
  EXPECT_EQ(tag, job_tag("00112233"));
  EXPECT_NE(tag, job_tag("00112234"));
  EXPECT_EQ(tag.size(), 16u);
  EXPECT_EQ(tag.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(tag.find("00112233"), std::string::npos);
}

TEST(JobNames, RemoveJobLeftoversRemovesOnlyThatJobsObjects) {
  const std::string tag = job_tag("leftover test " + std::to_string(::getpid()));
  const std::string other = job_tag("another job " + std::to_string(::getpid()));
  for (const std::string& name : {"/kolo-" + tag + "-0-0-1", "/kolo-" + tag + "-0-arena-0",
                                  "/kolo-" + other + "-0-0-1"}) {
    const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << name;
    ::close(fd);
  }
  EXPECT_EQ(remove_job_leftovers(tag), 2);
  EXPECT_TRUE(testing::dev_shm_entries_with(tag).empty());
  EXPECT_EQ(testing::dev_shm_entries_with(other).size(), 1u);
  EXPECT_EQ(remove_job_leftovers(other), 1);
  EXPECT_EQ(remove_job_leftovers(tag), 0);
}

}  // namespace
}  // namespace kolo::transport::shm
