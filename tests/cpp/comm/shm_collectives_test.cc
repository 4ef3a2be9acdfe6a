// Every collective over shared-memory links (small rings, so transfers wrap and wait for room),
// for the newer algorithms over sockets too, and through the host's shared-memory arena (a small
// one, so large counts take many steps and reuse both slot halves): 2, 3 and 4 ranks, counts 0,
// 1, odd and large, uneven and empty blocks.
// Also: a peer that goes away on shm is named by the survivors.
#include <gtest/gtest.h>

#include <numeric>
#include <tuple>

#include "base/errors.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"
#include "kernels/typed_values.h"

namespace kolo::comm {
namespace {

using testing::LinkKind;
using testing::RankThreads;

const size_t kCounts[] = {0, 1, 7, 100003};

std::byte byte_of(int rank, size_t i) {
  return std::byte(static_cast<uint8_t>(rank * 131 + i * 7 + i / 251));
}

// arena: the ranks also share a collective arena, which allgatherv, broadcast, reducescatter and
// alltoallv then go through (a host with CPUs to spare: at every size).
class OnLinks : public ::testing::TestWithParam<std::tuple<LinkKind, int, bool>> {
 protected:
  RankThreads group() {
    const auto [kind, size, arena] = GetParam();
    if (!arena) return RankThreads(size, kind);
    CommunicatorOptions options = testing::default_test_options();
    options.host_cpus = 64;
    return RankThreads(std::vector<CommunicatorOptions>(static_cast<size_t>(size), options), kind,
                       size_t{64} * 1024, std::nullopt, size_t{16} * 1024);
  }
};

TEST_P(OnLinks, AllreduceEveryAlgorithmMatchesReference) {
  auto ranks = group();
  for (size_t count : kCounts) {
    for (auto [type, op] :
         {std::pair{DataType::float32, ReduceOp::sum}, std::pair{DataType::int32, ReduceOp::max},
          std::pair{DataType::float16, ReduceOp::sum}}) {
      std::vector<std::vector<std::byte>> inputs;
      for (int r = 0; r < ranks.size(); ++r) {
        inputs.push_back(kernels::testing::make_input(type, op, r, count));
      }
      const auto expected = kernels::testing::reference_reduce(inputs, type, op);
      ranks.run([&](Communicator& comm) {
        for (auto algorithm : {AllreduceAlgorithm::ring, AllreduceAlgorithm::recursive_doubling,
                               AllreduceAlgorithm::halving_doubling}) {
          auto data = inputs[comm.rank()];
          allreduce(comm, data, count, type, op, {algorithm, 64 * 1024});
          EXPECT_EQ(kernels::testing::first_difference(data, expected, type), "")
              << "rank " << comm.rank() << " count " << count << " " << dtype_name(type);
        }
      });
    }
  }
}

TEST_P(OnLinks, AllgathervBroadcastBarrier) {
  auto ranks = group();
  const int n = ranks.size();
  for (size_t count : kCounts) {
    std::vector<size_t> sizes;
    for (int r = 0; r < n; ++r) sizes.push_back(r % 2 == 0 ? count : count / 3);
    const size_t total = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
    std::vector<std::byte> expected;
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < sizes[r]; ++i) expected.push_back(byte_of(r, i));
    }
    ranks.run([&](Communicator& comm) {
      std::vector<std::byte> mine(sizes[comm.rank()]);
      for (size_t i = 0; i < mine.size(); ++i) mine[i] = byte_of(comm.rank(), i);
      std::vector<std::byte> out(total);
      allgatherv(comm, mine, out, sizes);
      EXPECT_TRUE(out == expected) << "allgatherv rank " << comm.rank() << " count " << count;

      const int root = n - 1;
      std::vector<std::byte> data(count);
      for (size_t i = 0; i < count; ++i) data[i] = byte_of(comm.rank(), i);
      broadcast(comm, data, root);
      for (size_t i = 0; i < count; ++i) {
        if (data[i] != byte_of(root, i)) {
          ADD_FAILURE() << "broadcast rank " << comm.rank() << " byte " << i;
          break;
        }
      }
      barrier(comm);
    });
  }
}

TEST_P(OnLinks, ReducescatterUnevenBlocks) {
  auto ranks = group();
  const int n = ranks.size();
  const DataType type = DataType::int32;
  for (size_t count : kCounts) {
    std::vector<size_t> counts;  // uneven: rank r gets count + r elements, one rank none
    for (int r = 0; r < n; ++r) counts.push_back(r == 1 ? 0 : count + static_cast<size_t>(r));
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    std::vector<std::vector<std::byte>> inputs;
    for (int r = 0; r < n; ++r)
      inputs.push_back(kernels::testing::make_input(type, ReduceOp::sum, r, total));
    const auto expected = kernels::testing::reference_reduce(inputs, type, ReduceOp::sum);
    ranks.run([&](Communicator& comm) {
      const int rank = comm.rank();
      auto data = inputs[rank];
      std::vector<std::byte> out(counts[rank] * 4);
      reducescatter(comm, data, counts, type, ReduceOp::sum, out);
      const size_t first = std::accumulate(counts.begin(), counts.begin() + rank, size_t{0});
      const std::vector<std::byte> want(
          expected.begin() + static_cast<ptrdiff_t>(first * 4),
          expected.begin() + static_cast<ptrdiff_t>((first + counts[rank]) * 4));
      EXPECT_EQ(kernels::testing::first_difference(out, want, type), "")
          << "rank " << rank << " count " << count;
    });
  }
}

TEST_P(OnLinks, AlltoallvUnevenBlocks) {
  auto ranks = group();
  const int n = ranks.size();
  for (size_t count : kCounts) {
    // Rank s sends (s + 2 * d) % 3 * count + d bytes to rank d.
    auto bytes = [&](int s, int d) { return static_cast<size_t>((s + 2 * d) % 3) * count + d; };
    auto value = [](int s, int d, size_t i) {
      return std::byte(static_cast<uint8_t>(s * 17 + d * 5 + i));
    };
    ranks.run([&](Communicator& comm) {
      const int rank = comm.rank();
      std::vector<size_t> send_bytes, recv_bytes;
      std::vector<std::byte> in, want;
      for (int d = 0; d < n; ++d) {
        send_bytes.push_back(bytes(rank, d));
        for (size_t i = 0; i < bytes(rank, d); ++i) in.push_back(value(rank, d, i));
      }
      for (int s = 0; s < n; ++s) {
        recv_bytes.push_back(bytes(s, rank));
        for (size_t i = 0; i < bytes(s, rank); ++i) want.push_back(value(s, rank, i));
      }
      std::vector<std::byte> out(want.size());
      alltoallv(comm, in, send_bytes, out, recv_bytes);
      EXPECT_TRUE(out == want) << "rank " << rank << " count " << count;
    });
  }
}

std::string link_name(const ::testing::TestParamInfo<OnLinks::ParamType>& info) {
  return std::string(std::get<0>(info.param) == LinkKind::shm ? "shm" : "socket") +
         (std::get<2>(info.param) ? "_arena" : "") + "_np" +
         std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Transports, OnLinks,
                         ::testing::Combine(::testing::Values(LinkKind::shm, LinkKind::socket),
                                            ::testing::Values(2, 3, 4), ::testing::Values(false)),
                         link_name);
INSTANTIATE_TEST_SUITE_P(HostArena, OnLinks,
                         ::testing::Combine(::testing::Values(LinkKind::shm),
                                            ::testing::Values(2, 3, 4), ::testing::Values(true)),
                         link_name);

TEST(ShmLinks, LargeTransferThroughSmallRingBothWays) {
  RankThreads ranks(2, LinkKind::shm, 4096);
  const size_t size = (3 << 20) + 5;
  ranks.run([&](Communicator& comm) {
    const int peer = 1 - comm.rank();
    std::vector<std::byte> out(size), in(size);
    for (size_t i = 0; i < size; ++i) out[i] = byte_of(comm.rank(), i);
    comm.send_recv(peer, out, peer, in);
    for (size_t i = 0; i < size; ++i) {
      if (in[i] != byte_of(peer, i)) {
        ADD_FAILURE() << "rank " << comm.rank() << " byte " << i;
        break;
      }
    }
  });
}

TEST(ShmLinks, PeerThatLeavesIsNamed) {
  RankThreads ranks(3, LinkKind::shm);
  const auto errors = ranks.run_collect([](Communicator& comm) {
    if (comm.rank() == 2) {
      comm.abort();  // as a dying process: its end of every lifeline closes
      return;
    }
    std::vector<std::byte> data(1 << 20);
    allreduce(comm, data, data.size() / 4, DataType::float32, ReduceOp::sum);
  });
  int named_rank_2 = 0;
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " did not notice rank 2 leaving";
    try {
      std::rethrow_exception(errors[r]);
    } catch (const PeerError& e) {
      // Rank 2 itself, or the survivor that failed first because of it and closed its links.
      EXPECT_TRUE(e.peer_rank() == 2 || e.peer_rank() == 1 - r) << e.what();
      EXPECT_NE(std::string(e.what()).find("via shared memory"), std::string::npos) << e.what();
      if (e.peer_rank() == 2) ++named_rank_2;
    }
  }
  EXPECT_GE(named_rank_2, 1);
}

}  // namespace
}  // namespace kolo::comm
