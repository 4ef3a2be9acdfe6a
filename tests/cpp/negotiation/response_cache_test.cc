#include "negotiation/response_cache.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/errors.h"

namespace kolo::negotiation {
namespace {

using State = ResponseCache::State;

Request request(std::string name, std::vector<int64_t> shape = {8}) {
  Request r;
  r.rank = 1;
  r.name = std::move(name);
  r.shape = std::move(shape);
  return r;
}

Response response_for(const Request& r) {
  Response out;
  out.op = r.op;
  out.names = {r.name};
  out.dtype = r.dtype;
  return out;
}

void put(ResponseCache& cache, const Request& r) { cache.put(response_for(r), r); }

TEST(ResponseCacheTest, MissThenHit) {
  ResponseCache cache(4);
  EXPECT_TRUE(cache.enabled());
  EXPECT_EQ(cache.lookup(request("a")).state, State::miss);
  put(cache, request("a"));
  put(cache, request("b"));
  auto a = cache.lookup(request("a"));
  auto b = cache.lookup(request("b"));
  EXPECT_EQ(a.state, State::hit);
  EXPECT_EQ(b.state, State::hit);
  EXPECT_EQ(a.bit, 0u);
  EXPECT_EQ(b.bit, 1u);
  EXPECT_EQ(cache.response(a.bit).names, std::vector<std::string>{"a"});
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.bit_count(), 2u);
}

TEST(ResponseCacheTest, DifferentParametersAreInvalid) {
  ResponseCache cache(4);
  put(cache, request("a"));
  auto changed = cache.lookup(request("a", {9}));
  EXPECT_EQ(changed.state, State::invalid);
  EXPECT_EQ(changed.bit, 0u);
  Request other_dtype = request("a");
  other_dtype.dtype = DataType::float64;
  EXPECT_EQ(cache.lookup(other_dtype).state, State::invalid);
  cache.erase(changed.bit);
  EXPECT_EQ(cache.lookup(request("a")).state, State::miss);
  EXPECT_FALSE(cache.contains(0));
}

TEST(ResponseCacheTest, EvictsLeastRecentlyUsed) {
  ResponseCache cache(3);
  put(cache, request("a"));
  put(cache, request("b"));
  put(cache, request("c"));
  cache.touch(*cache.bit_of("a"));  // order now (most recent first): a, c, b
  put(cache, request("d"));         // evicts b, takes its bit
  EXPECT_EQ(cache.lookup(request("b")).state, State::miss);
  EXPECT_EQ(cache.lookup(request("a")).state, State::hit);
  EXPECT_EQ(*cache.bit_of("d"), 1u);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.bit_count(), 3u);
  put(cache, request("e"));  // evicts c (a was touched, d is new)
  EXPECT_EQ(cache.lookup(request("c")).state, State::miss);
  EXPECT_EQ(*cache.bit_of("e"), 2u);
}

TEST(ResponseCacheTest, ErasedBitsAreReusedLowestFirst) {
  ResponseCache cache(8);
  for (const char* name : {"a", "b", "c", "d"}) put(cache, request(name));
  cache.erase(*cache.bit_of("c"));
  cache.erase(*cache.bit_of("a"));
  put(cache, request("x"));
  put(cache, request("y"));
  put(cache, request("z"));
  EXPECT_EQ(*cache.bit_of("x"), 0u);
  EXPECT_EQ(*cache.bit_of("y"), 2u);
  EXPECT_EQ(*cache.bit_of("z"), 4u);
  EXPECT_EQ(cache.bit_count(), 5u);
}

TEST(ResponseCacheTest, PutReplacesSameName) {
  ResponseCache cache(4);
  put(cache, request("a"));
  put(cache, request("a", {16}));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.lookup(request("a", {16})).state, State::hit);
  EXPECT_EQ(cache.lookup(request("a")).state, State::invalid);
}

// Two caches driven with the same operations agree on every bit (what keeps ranks in step),
// even though each stores its own local request.
TEST(ResponseCacheTest, IdenticalOperationsGiveIdenticalBits) {
  ResponseCache rank0(5), rank1(5);
  for (int i = 0; i < 40; ++i) {
    std::string name = fmt::format("t{}", (i * 7) % 11);
    Request r0 = request(name);
    Request r1 = request(name);
    r0.rank = 0;
    r1.device_index = 3;
    rank0.put(response_for(r0), r0);
    rank1.put(response_for(r1), r1);
    if (i % 3 == 0) {
      auto bit = rank0.bit_of(fmt::format("t{}", i % 11));
      if (bit) {
        rank0.touch(*bit);
        rank1.touch(*bit);
      }
    }
    if (i % 5 == 0) {
      rank0.erase(static_cast<uint32_t>(i % 5));
      rank1.erase(static_cast<uint32_t>(i % 5));
    }
    ASSERT_EQ(rank0.bit_count(), rank1.bit_count());
    for (uint32_t bit = 0; bit < rank0.bit_count(); ++bit) {
      ASSERT_EQ(rank0.contains(bit), rank1.contains(bit));
      if (rank0.contains(bit)) {
        ASSERT_EQ(rank0.response(bit), rank1.response(bit));
      }
    }
  }
  EXPECT_LE(rank0.bit_count(), 5u);
}

TEST(ResponseCacheTest, CapacityZeroDisables) {
  ResponseCache cache(0);
  EXPECT_FALSE(cache.enabled());
  put(cache, request("a"));
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.bit_count(), 0u);
  EXPECT_EQ(cache.lookup(request("a")).state, State::miss);
}

TEST(ResponseCacheTest, RefusesErrorsAndMultiNameResponses) {
  ResponseCache cache(4);
  Request r = request("a");
  Response failed = response_for(r);
  failed.error = "Mismatched dtype";
  EXPECT_THROW(cache.put(failed, r), InvalidArgument);
  Response fused = response_for(r);
  fused.names.push_back("b");
  EXPECT_THROW(cache.put(fused, r), InvalidArgument);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_THROW((void)cache.response(0), InvalidArgument);
}

}  // namespace
}  // namespace kolo::negotiation
