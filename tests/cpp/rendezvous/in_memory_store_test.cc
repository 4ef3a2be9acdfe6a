#include "rendezvous/in_memory_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "transport/test_support.h"

namespace kolo::rendezvous {
namespace {

using namespace std::chrono_literals;
using kolo::testing::seconds_since;

TEST(InMemoryStore, SetThenGetAndOverwrite) {
  InMemoryStore store;
  store.set("a", "1");
  EXPECT_EQ(store.get("a", 0s), "1");
  store.set("a", std::string("x\0y", 3));
  EXPECT_EQ(store.get("a", 0s), std::string("x\0y", 3));
  store.set("empty", "");
  EXPECT_EQ(store.get("empty", 0s), "");
}

TEST(InMemoryStore, GetWaitsForALaterSetFromAnotherThread) {
  InMemoryStore store;
  const auto start = std::chrono::steady_clock::now();
  std::thread setter([&] {
    std::this_thread::sleep_for(100ms);
    store.set("late", "value");
  });
  EXPECT_EQ(store.get("late", 10s), "value");
  EXPECT_GE(seconds_since(start), 0.09);
  setter.join();
}

TEST(InMemoryStore, GetTimesOutNamingTheKey) {
  InMemoryStore store;
  const auto start = std::chrono::steady_clock::now();
  try {
    store.get("kolo/round0/addr/3", 150ms);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("'kolo/round0/addr/3'"), std::string::npos) << e.what();
  }
  EXPECT_GE(seconds_since(start), 0.14);
  EXPECT_LT(seconds_since(start), 2.0);
  EXPECT_THROW(store.get("x", -1s), TimeoutError);  // negative: do not wait
}

TEST(InMemoryStore, AddCountsFromZeroAndRejectsNonIntegers) {
  InMemoryStore store;
  EXPECT_EQ(store.add("n", 5), 5);
  EXPECT_EQ(store.add("n", -7), -2);
  EXPECT_EQ(store.get("n", 0s), "-2");
  store.set("text", "hello");
  try {
    store.add("text", 1);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'text'"), std::string::npos) << e.what();
  }
  store.set("big", std::to_string(INT64_MAX));
  EXPECT_THROW(store.add("big", 1), InvalidArgument);
}

TEST(InMemoryStore, ConcurrentAddsAllCount) {
  InMemoryStore store;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) store.add("counter", 1);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(store.add("counter", 0), 8000);
}

TEST(InMemoryStore, WaitReturnsWhenAllKeysExistAndNamesTheMissingOnes) {
  InMemoryStore store;
  store.wait({}, 0s);
  store.set("a", "1");
  std::thread setter([&] {
    std::this_thread::sleep_for(50ms);
    store.set("b", "2");
  });
  store.wait({"a", "b"}, 10s);
  setter.join();
  try {
    store.wait({"a", "c", "d"}, 100ms);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'c', 'd'"), std::string::npos) << what;
    EXPECT_EQ(what.find("'a'"), std::string::npos) << what;
  }
}

TEST(InMemoryStore, HugeTimeoutDoesNotOverflow) {
  InMemoryStore store;
  store.set("k", "v");
  EXPECT_EQ(store.get("k", Duration::max()), "v");
  store.wait({"k"}, Duration::max());
}

}  // namespace
}  // namespace kolo::rendezvous
