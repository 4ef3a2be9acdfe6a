#include "core/thread_affinity.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <thread>

#include "base/errors.h"
#include "base/fake_env.h"
#include "core/config.h"

namespace kolo::core {
namespace {

const Logger quiet(LogLevel::off);

TEST(ThreadAffinity, CoreListsParse) {
  EXPECT_EQ(parse_core_list("3", "HOROVOD_THREAD_AFFINITY"), (std::vector<int>{3}));
  EXPECT_EQ(parse_core_list("0,2,1", "HOROVOD_THREAD_AFFINITY"), (std::vector<int>{0, 2, 1}));
  for (const char* bad : {"", "a", "1,", ",1", "-1", "1;2", "1.5"}) {
    try {
      parse_core_list(bad, "HOROVOD_THREAD_AFFINITY");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("HOROVOD_THREAD_AFFINITY"), std::string::npos);
    }
  }
}

TEST(ThreadAffinity, ConfigReadsItAndTheTimestampSwitch) {
  Config plain = Config::from_env(env_of({}), {});
  EXPECT_TRUE(plain.thread_affinity.empty());
  EXPECT_FALSE(plain.log_timestamps);  // kolo's default: no timestamps
  Config set = Config::from_env(
      env_of({{"HOROVOD_THREAD_AFFINITY", "1,0"}, {"HOROVOD_LOG_HIDE_TIME", "0"}}), {});
  EXPECT_EQ(set.thread_affinity, (std::vector<int>{1, 0}));
  EXPECT_TRUE(set.log_timestamps);
  EXPECT_THROW(Config::from_env(env_of({{"KOLO_THREAD_AFFINITY", "x"}}), {}), InvalidArgument);
}

TEST(ThreadAffinity, EachLocalRankTakesItsCoreOrNoneWhenTooFewAreListed) {
  EXPECT_EQ(core_for_local_rank({}, 0, 2, quiet), std::nullopt);
  EXPECT_EQ(core_for_local_rank({4, 6}, 0, 2, quiet), 4);
  EXPECT_EQ(core_for_local_rank({4, 6}, 1, 2, quiet), 6);
  EXPECT_EQ(core_for_local_rank({4}, 0, 2, quiet), std::nullopt);  // as Horovod: pins nothing
}

TEST(ThreadAffinity, PinsTheCallingThreadOnly) {
  cpu_set_t before;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(before), &before), 0);
  int target = -1;
  for (int core = 0; core < CPU_SETSIZE && target < 0; ++core) {
    if (CPU_ISSET(core, &before)) target = core;
  }
  ASSERT_GE(target, 0);
  int pinned_count = -1;
  bool pinned_there = false;
  bool ok = false;
  std::thread worker([&] {
    ok = pin_thread(pthread_self(), target, quiet);
    cpu_set_t now;
    pthread_getaffinity_np(pthread_self(), sizeof(now), &now);
    pinned_count = CPU_COUNT(&now);
    pinned_there = CPU_ISSET(target, &now);
  });
  worker.join();
  EXPECT_TRUE(ok);
  EXPECT_EQ(pinned_count, 1);
  EXPECT_TRUE(pinned_there);
  cpu_set_t after;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));  // this thread untouched
}

TEST(ThreadAffinity, ACoreTheMachineLacksIsRefusedWithoutPinning) {
  bool ok = true;
  std::thread worker([&] { ok = pin_thread(pthread_self(), CPU_SETSIZE - 1, quiet); });
  worker.join();
  EXPECT_FALSE(ok || sysconf(_SC_NPROCESSORS_CONF) >= CPU_SETSIZE);
  std::thread beyond([&] { ok = pin_thread(pthread_self(), CPU_SETSIZE + 5, quiet); });
  beyond.join();
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace kolo::core
