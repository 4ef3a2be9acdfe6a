#include "placement/affinity.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace kolo::placement {
namespace {

// A thread that reports its mask when asked and stays alive until told to end.
class Sleeper {
 public:
  explicit Sleeper(std::optional<std::vector<int>> pin = std::nullopt)
      : thread_([this, pin] {
          if (pin) set_thread_affinity(*pin);
          std::unique_lock lock(mutex_);
          started_ = true;
          changed_.notify_all();
          while (!asked_end_) {
            changed_.wait(lock, [&] { return asked_end_ || asked_mask_; });
            if (asked_mask_) {
              mask_ = thread_affinity();
              asked_mask_ = false;
              changed_.notify_all();
            }
          }
        }) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return started_; });
  }
  ~Sleeper() {
    {
      std::lock_guard lock(mutex_);
      asked_end_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  std::vector<int> mask() {
    std::unique_lock lock(mutex_);
    asked_mask_ = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return !asked_mask_; });
    return mask_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool started_ = false, asked_end_ = false, asked_mask_ = false;
  std::vector<int> mask_;
  std::thread thread_;
};

// Restores the test process's mask, whatever a test did to it.
class Affinity : public ::testing::Test {
 protected:
  void SetUp() override {
    original_ = thread_affinity();
    if (original_.size() < 2) GTEST_SKIP() << "needs 2 CPUs in this process's mask";
  }
  void TearDown() override {
    if (!original_.empty()) set_thread_affinity(original_);
  }
  std::vector<int> original_;
};

TEST_F(Affinity, MovesThreadsWithTheJobsMaskAndKeepsPinnedOnes) {
  const std::vector<int> share{original_.back()};
  const std::vector<int> pinned{original_.front()};
  Sleeper plain;
  Sleeper placed_by_user(pinned);
  EXPECT_EQ(plain.mask(), original_);
  EXPECT_GE(move_threads({original_}, share), 2);  // this thread and `plain`
  EXPECT_EQ(thread_affinity(), share);
  EXPECT_EQ(plain.mask(), share);
  EXPECT_EQ(placed_by_user.mask(), pinned);
  Sleeper later;  // a thread started afterwards inherits the share
  EXPECT_EQ(later.mask(), share);
}

TEST_F(Affinity, RefusingTheKernelsNamesTheCpus) {
  try {
    set_thread_affinity({CPU_SETSIZE + 1});  // beyond what a mask holds: an empty mask
    ADD_FAILURE() << "accepted";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("sched_setaffinity"), std::string::npos);
  }
  EXPECT_EQ(thread_affinity(), original_);
}

}  // namespace
}  // namespace kolo::placement
