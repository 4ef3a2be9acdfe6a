// comm::WorkSplitter: every part runs exactly once whoever takes it, a part's exception reaches
// the caller, back-to-back runs do not mix their parts, and helpers start inside the creating
// thread's CPU mask.
#include "comm/work_splitter.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kolo::comm {
namespace {

TEST(WorkSplitter, RunsEveryPartOnceOverManyRuns) {
  WorkSplitter splitter(4);
  ASSERT_EQ(splitter.threads(), 4u);
  // Runs of 0, 1 and more parts than threads, back to back: a helper late for one run must not
  // take a part of the next one.
  for (size_t run = 0; run < 300; ++run) {
    const size_t parts = run % 7;
    std::vector<std::atomic<int>> calls(parts);
    std::atomic<size_t> run_seen{run};
    splitter.run(parts, [&](size_t part) {
      calls[part].fetch_add(1);
      EXPECT_EQ(run_seen.load(), run);
    });
    for (size_t i = 0; i < parts; ++i) {
      ASSERT_EQ(calls[i].load(), 1) << "run " << run << " part " << i;
    }
  }
}

TEST(WorkSplitter, HelpersRunPartsBesideTheCaller) {
  WorkSplitter splitter(3);
  // Each part waits until all three have started: only three threads at once get through (the
  // 10 s bound turns a splitter that runs them one by one into a failure, not a hang).
  std::atomic<int> started{0};
  std::atomic<bool> all_met{true};
  splitter.run(3, [&](size_t) {
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 3) {
      if (std::chrono::steady_clock::now() > deadline) {
        all_met = false;
        return;
      }
      std::this_thread::yield();
    }
  });
  EXPECT_TRUE(all_met.load()) << "the parts did not run at the same time";
}

TEST(WorkSplitter, OneThreadRunsPartsInOrderOnTheCaller) {
  WorkSplitter splitter(1);
  EXPECT_EQ(splitter.threads(), 1u);
  EXPECT_TRUE(splitter.helper_tids().empty());
  std::vector<size_t> order;
  splitter.run(5, [&](size_t part) { order.push_back(part); });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
}

TEST(WorkSplitter, RethrowsAPartsErrorAfterTheOtherParts) {
  WorkSplitter splitter(3);
  std::atomic<int> ran{0};
  EXPECT_THROW(splitter.run(16,
                            [&](size_t part) {
                              ran.fetch_add(1);
                              if (part == 9) throw std::runtime_error("part 9 failed");
                            }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 16);
  // Usable afterwards, and the error does not come back.
  std::atomic<int> again{0};
  splitter.run(8, [&](size_t) { again.fetch_add(1); });
  EXPECT_EQ(again.load(), 8);
}

std::vector<int> cpus_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(::sched_getaffinity(tid, sizeof(set), &set), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

TEST(WorkSplitter, HelpersInheritTheCreatingThreadsMask) {
  const std::vector<int> before = cpus_of(0);
  if (before.size() < 2) GTEST_SKIP() << "needs 2 CPUs to narrow the mask";
  // The creating thread narrowed to its last CPU, as a rank's placement narrows the background
  // thread to the rank's share.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(before.back(), &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0);
  {
    WorkSplitter splitter(3);
    ASSERT_EQ(splitter.helper_tids().size(), 2u);
    for (const pid_t tid : splitter.helper_tids()) {
      EXPECT_EQ(cpus_of(tid), std::vector<int>{before.back()}) << "helper " << tid;
    }
  }
  cpu_set_t all;
  CPU_ZERO(&all);
  for (const int cpu : before) CPU_SET(cpu, &all);
  ASSERT_EQ(::sched_setaffinity(0, sizeof(all), &all), 0);
}

}  // namespace
}  // namespace kolo::comm
