// Allreduces with their copies and folds cut into parts for helper threads
// (Communicator::work_splitter) give the same bits on every rank as the collective's thread alone:
// the host arena's (2 and 3 ranks, odd counts, every dtype class, Sum and Average, fused groups
// of tensors in place and out of place; 32 KiB slot halves and parts from 1 KiB, so every step
// is cut and parts straddle slices, pieces and the rank's own slice) and the ring's fold.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>

#include "comm/collectives.h"
#include "comm/piece_list.h"
#include "comm/rank_threads.h"
#include "comm/step_parts.h"
#include "comm/work_splitter.h"

namespace kolo::comm {
namespace {

using testing::LinkKind;
using testing::RankThreads;

constexpr size_t kChunk = size_t{32} * 1024;

TEST(StepParts, CoversTheRangeAroundTheHoleOnceInLineAlignedParts) {
  WorkSplitter splitter(4);
  // [100, 100 + 10000) without the hole [3000, 5004): each byte once, parts from whole lines.
  std::vector<std::atomic<int>> seen(20000);
  std::vector<std::pair<size_t, size_t>> runs;
  std::mutex runs_mutex;
  detail::for_each_part(&splitter, 1000, 4, 100, 10100, 3000, 5004, [&](size_t begin, size_t len) {
    for (size_t i = begin; i < begin + len; ++i) seen[i].fetch_add(1);
    std::lock_guard lock(runs_mutex);
    runs.emplace_back(begin, len);
  });
  for (size_t i = 0; i < seen.size(); ++i) {
    const bool wanted = i >= 100 && i < 10100 && (i < 3000 || i >= 5004);
    ASSERT_EQ(seen[i].load(), wanted ? 1 : 0) << "byte " << i;
  }
  EXPECT_GE(runs.size(), 4u) << "the range was not cut";
  for (const auto& [begin, len] : runs) {
    // A part starts on a line counted without the hole, or right after the hole.
    const size_t counted = begin >= 5004 ? begin - 100 - 2004 : begin - 100;
    EXPECT_TRUE(counted % 64 == 0 || begin == 5004) << "run at " << begin;
  }
}

// Random values that keep every dtype finite and its sums in range.
std::vector<std::byte> values(DataType type, size_t count, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<std::byte> bytes(count * dtype_size(type));
  for (std::byte& b : bytes) b = static_cast<std::byte>(random());
  for (size_t i = 0; i < count; ++i) {
    std::byte* const top = bytes.data() + (i + 1) * dtype_size(type) - 1;  // little endian
    // float32/16, bfloat16: the top exponent bit clear (no inf or NaN); ints: small magnitudes.
    *top &= is_floating(type) ? std::byte{0x3f} : std::byte{0x07};
  }
  return bytes;
}

std::vector<size_t> cut(size_t count) {  // an empty piece, then uneven ones
  std::vector<size_t> sizes{0};
  for (size_t next = 1, left = count; left > 0; next = next * 7 + 5) {
    sizes.push_back(std::min(next, left));
    left -= sizes.back();
  }
  return sizes;
}

// Allreduces `input` as fused pieces (odd pieces out of place) and returns the outputs'
// concatenation.
std::vector<std::byte> fused_allreduce(Communicator& comm, const std::vector<std::byte>& input,
                                       DataType type, const kernels::ResultScale& scale) {
  const size_t element = dtype_size(type);
  std::vector<std::byte> in_place = input, out_of_place(input.size());
  std::vector<BufferPiece> pieces;
  size_t at = 0;
  for (size_t i = 0; const size_t elements : cut(input.size() / element)) {
    std::byte* const out = ((i++ % 2 == 1) ? out_of_place.data() : in_place.data()) + at;
    pieces.push_back({in_place.data() + at, out, elements * element});
    at += elements * element;
  }
  allreduce_shared_memory(comm, PieceList(pieces), type, ReduceOp::sum, scale);
  std::vector<std::byte> result(input.size());
  for (const BufferPiece& piece : pieces) {
    std::memcpy(result.data() + (piece.input - in_place.data()), piece.output, piece.bytes);
  }
  return result;
}

class ArenaSplit : public ::testing::TestWithParam<int> {};

TEST_P(ArenaSplit, SameBitsAsOneThread) {
  const int size = GetParam();
  RankThreads group(
      std::vector<CommunicatorOptions>(static_cast<size_t>(size), testing::default_test_options()),
      LinkKind::socket, size_t{64} * 1024, std::nullopt, kChunk, SIZE_MAX);
  group.run([&](Communicator& comm) {
    WorkSplitter splitter(4);  // on a 2-core machine too: parts interleave with the peers
    for (const DataType type : {DataType::float32, DataType::float16, DataType::bfloat16,
                                DataType::int32, DataType::int8, DataType::float64}) {
      for (const int average_over : {1, size}) {
        const kernels::ResultScale scale{.average_over = average_over};
        const size_t count = 50021;  // odd: uneven slices; several steps for every dtype
        const auto input = values(type, count, static_cast<unsigned>(11 * comm.rank() + 3));
        comm.set_work_splitter(nullptr);
        const std::vector<std::byte> alone = fused_allreduce(comm, input, type, scale);
        comm.set_work_splitter(&splitter, 1024);
        const std::vector<std::byte> split = fused_allreduce(comm, input, type, scale);
        comm.set_work_splitter(nullptr);
        size_t first = 0;
        while (first < alone.size() && alone[first] == split[first]) ++first;
        EXPECT_EQ(first, alone.size())
            << "rank " << comm.rank() << " " << dtype_name(type) << " average_over " << average_over
            << ": byte " << first << " differs with the step cut into parts";
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ArenaSplit, ::testing::Values(2, 3));

class RingSplit : public ::testing::TestWithParam<int> {};

TEST_P(RingSplit, SameBitsAsOneThread) {
  const int size = GetParam();
  RankThreads group(size);
  group.run([&](Communicator& comm) {
    WorkSplitter splitter(3);
    for (const DataType type : {DataType::float32, DataType::bfloat16, DataType::int32}) {
      const kernels::ResultScale scale{.average_over = size};
      // Over 1 MiB: the ring folds it in 1 MiB segments, each cut into parts here.
      const size_t count = 300007;
      const auto input = values(type, count, static_cast<unsigned>(5 * comm.rank() + 1));
      std::vector<std::byte> alone = input, split = input;
      comm.set_work_splitter(nullptr);
      allreduce_ring(comm, alone, count, type, ReduceOp::sum, scale);
      comm.set_work_splitter(&splitter, 1024);
      allreduce_ring(comm, split, count, type, ReduceOp::sum, scale);
      comm.set_work_splitter(nullptr);
      size_t first = 0;
      while (first < alone.size() && alone[first] == split[first]) ++first;
      EXPECT_EQ(first, alone.size()) << "rank " << comm.rank() << " " << dtype_name(type)
                                     << ": byte " << first << " differs with the fold cut";
      EXPECT_NE(alone, input) << "nothing was reduced";
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, RingSplit, ::testing::Values(2, 3));

}  // namespace
}  // namespace kolo::comm
