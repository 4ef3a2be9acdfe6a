// A fused allreduce straight from its tensors through the host arena (PieceList, no fusion
// buffer): the pieces' outputs get the same bits as the contiguous allreduce of their
// concatenation, on 2 and 3 ranks, whatever the cut (empty pieces, pieces across step and slice
// boundaries, in place and out of place), and out-of-place inputs are left as they were.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <tuple>

#include "comm/collectives.h"
#include "comm/piece_list.h"
#include "comm/rank_threads.h"

namespace kolo::comm {
namespace {

using testing::LinkKind;
using testing::RankThreads;

constexpr size_t kChunk = size_t{32} * 1024;  // slot half: 100003 floats take 13 steps

TEST(PieceList, GathersAndScattersAcrossPieceBoundaries) {
  std::vector<std::byte> a(5), b(0), c(7), out_a(5), out_c(7);
  std::iota(reinterpret_cast<unsigned char*>(a.data()),
            reinterpret_cast<unsigned char*>(a.data()) + 5, 0);
  std::iota(reinterpret_cast<unsigned char*>(c.data()),
            reinterpret_cast<unsigned char*>(c.data()) + 7, 5);
  const BufferPiece pieces[] = {
      {a.data(), out_a.data(), 5}, {b.data(), b.data(), 0}, {c.data(), out_c.data(), 7}};
  const PieceList list(pieces);
  ASSERT_EQ(list.bytes(), 12u);
  std::vector<std::byte> gathered(6);
  list.gather(gathered.data(), 3, 6);  // the last two of `a`, the first four of `c`
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(static_cast<int>(gathered[i]), 3 + static_cast<int>(i));
  list.scatter(gathered.data(), 3, 6);
  EXPECT_EQ(static_cast<int>(out_a[3]), 3);
  EXPECT_EQ(static_cast<int>(out_a[4]), 4);
  EXPECT_EQ(static_cast<int>(out_c[0]), 5);
  EXPECT_EQ(static_cast<int>(out_c[3]), 8);
  EXPECT_EQ(static_cast<int>(out_c[4]), 0) << "scatter wrote past the range";
  EXPECT_EQ(static_cast<int>(out_a[2]), 0) << "scatter wrote before the range";
}

// Cuts of `count` elements: an empty piece first, a one-element piece, then uneven pieces.
std::vector<size_t> cut(size_t count) {
  std::vector<size_t> sizes{0};
  size_t left = count;
  for (size_t next = 1; left > 0; next = next * 5 + 3) {
    sizes.push_back(std::min(next, left));
    left -= sizes.back();
  }
  return sizes;
}

class ArenaPieces : public ::testing::TestWithParam<std::tuple<int, size_t, ReduceOp>> {};

TEST_P(ArenaPieces, SameBitsAsTheContiguousAllreduce) {
  const auto [size, count, op] = GetParam();
  const std::vector<size_t> sizes = cut(count);
  RankThreads group(
      std::vector<CommunicatorOptions>(static_cast<size_t>(size), testing::default_test_options()),
      LinkKind::socket, size_t{64} * 1024, std::nullopt, kChunk, SIZE_MAX);
  const kernels::ResultScale average{.average_over = size};
  group.run([&](Communicator& comm) {
    std::mt19937 random(static_cast<unsigned>(7 + comm.rank()));
    std::uniform_real_distribution<float> value(-100.0f, 100.0f);
    std::vector<float> whole(count);
    for (float& x : whole) x = value(random);
    const std::vector<float> inputs = whole;

    // Odd pieces out of place (their own output), even pieces in place in `in_place`.
    std::vector<float> in_place = inputs, outputs(count, -1.0f);
    std::vector<BufferPiece> pieces;
    size_t at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      float* const out = (i % 2 == 1 ? outputs.data() : in_place.data()) + at;
      pieces.push_back({reinterpret_cast<const std::byte*>(in_place.data() + at),
                        reinterpret_cast<std::byte*>(out), sizes[i] * sizeof(float)});
      at += sizes[i];
    }
    allreduce_shared_memory(comm, PieceList(pieces), DataType::float32, op, average);
    allreduce_shared_memory(comm, std::as_writable_bytes(std::span(whole)), count,
                            DataType::float32, op, average);

    at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const float* const got = (i % 2 == 1 ? outputs.data() : in_place.data()) + at;
      // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): identical bits are the point
      EXPECT_EQ(std::memcmp(got, whole.data() + at, sizes[i] * sizeof(float)), 0)
          << "rank " << comm.rank() << " piece " << i << " (" << sizes[i] << " elements at " << at
          << ") differs from the contiguous result";
      if (i % 2 == 1) {
        EXPECT_EQ(std::memcmp(in_place.data() + at, inputs.data() + at, sizes[i] * sizeof(float)),
                  0)
            << "rank " << comm.rank() << " piece " << i << ": an out-of-place input changed";
      }
      at += sizes[i];
    }
  });
}

// 7 floats fold whole; 100003 run 13 steps of sliced folds, the pieces crossing step and slice
// boundaries.
INSTANTIATE_TEST_SUITE_P(RanksCountsOps, ArenaPieces,
                         ::testing::Combine(::testing::Values(2, 3),
                                            ::testing::Values(size_t{7}, size_t{100003}),
                                            ::testing::Values(ReduceOp::sum, ReduceOp::max)));

}  // namespace
}  // namespace kolo::comm
