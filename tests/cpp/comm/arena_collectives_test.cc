// allgatherv, broadcast, reducescatter and alltoallv through the host's shared-memory collective
// arena (threads as ranks, each with its own mapping; a small arena so large counts take many
// steps): every dtype x op of reducescatter against the reference with uneven blocks and in place,
// allgatherv in place, a long mix of every arena collective (slot halves reused across collective
// kinds), the automatic choice, refusal without an arena, the hierarchical allreduce's host
// stage on per-host arenas, and a rank that leaves mid-broadcast named by every survivor.
// (shm_collectives_test runs the link tests' cases through the arena too.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <tuple>
#include <vector>

#include "base/errors.h"
#include "comm/collective_arena.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"
#include "comm/subgroup.h"
#include "kernels/typed_values.h"

namespace kolo::comm {
namespace {

using namespace std::chrono_literals;
using testing::LinkKind;
using testing::RankThreads;

constexpr size_t kChunk = size_t{16} * 1024;

RankThreads arena_group(int size, int host_cpus = 64, size_t max_bytes = SIZE_MAX,
                        std::optional<Topology> topology = std::nullopt) {
  CommunicatorOptions options = testing::default_test_options();
  options.host_cpus = host_cpus;
  const size_t n = topology ? topology->host_of_rank.size() : static_cast<size_t>(size);
  return RankThreads(std::vector<CommunicatorOptions>(n, options), LinkKind::shm, size_t{64} * 1024,
                     std::move(topology), kChunk, max_bytes);
}

// Blocks of `total` elements over n ranks: the first total % n one larger, as Horovod splits.
std::vector<size_t> split(size_t total, int n) {
  std::vector<size_t> counts;
  for (int r = 0; r < n; ++r) {
    counts.push_back(total / static_cast<size_t>(n) + (static_cast<size_t>(r) < total % n));
  }
  return counts;
}

class ArenaReducescatter : public ::testing::TestWithParam<std::tuple<int, size_t, bool>> {};

// in_place: `out` is this rank's own block of `data`, as the hierarchical allreduce calls it.
TEST_P(ArenaReducescatter, EveryTypeAndOpMatchesReference) {
  const auto [size, total, in_place] = GetParam();
  const std::vector<size_t> counts = split(total, size);
  auto group = arena_group(size);
  for (const kernels::testing::ReferenceCase& c :
       kernels::testing::every_reference_case(size, total)) {
    const size_t element = dtype_size(c.type);
    group.run([&](Communicator& comm) {
      const auto rank = static_cast<size_t>(comm.rank());
      const size_t first = std::accumulate(counts.begin(), counts.begin() + comm.rank(), size_t{0});
      auto data = c.inputs[rank];
      std::vector<std::byte> separate(counts[rank] * element);
      const Bytes out =
          in_place ? Bytes(data).subspan(first * element, counts[rank] * element) : Bytes(separate);
      reducescatter_shared_memory(comm, data, counts, c.type, c.op, out);
      const std::vector<std::byte> got(out.begin(), out.end());
      const std::vector<std::byte> want(
          c.expected.begin() + static_cast<ptrdiff_t>(first * element),
          c.expected.begin() + static_cast<ptrdiff_t>((first + counts[rank]) * element));
      EXPECT_EQ(kernels::testing::first_difference(got, want, c.type), "")
          << "rank " << rank << " " << dtype_name(c.type) << " " << reduce_op_name(c.op);
    });
  }
}

// 0 and fewer elements than ranks leave blocks empty; 4099 is not divisible by 2, 3 or 4;
// 100003 floats take a dozen steps of 16 KiB.
INSTANTIATE_TEST_SUITE_P(RanksCountsInPlace, ArenaReducescatter,
                         ::testing::Combine(::testing::Values(2, 3, 4),
                                            ::testing::Values(size_t{0}, size_t{1}, size_t{4099},
                                                              size_t{100003}),
                                            ::testing::Bool()));

class ArenaCollectives : public ::testing::TestWithParam<int> {};

TEST_P(ArenaCollectives, AllgathervInPlace) {
  const int n = GetParam();
  auto group = arena_group(n);
  for (size_t total : {size_t{0}, size_t{5}, size_t{40009}}) {
    const std::vector<size_t> counts = split(total, n);
    std::vector<size_t> bytes(counts);
    for (size_t& b : bytes) b *= 4;
    group.run([&](Communicator& comm) {
      std::vector<int32_t> out(total, -1);
      const size_t first = std::accumulate(counts.begin(), counts.begin() + comm.rank(), size_t{0});
      for (size_t i = 0; i < counts[static_cast<size_t>(comm.rank())]; ++i) {
        out[first + i] = static_cast<int32_t>(first + i);
      }
      const Bytes all = std::as_writable_bytes(std::span(out));
      allgatherv_shared_memory(comm, all.subspan(first * 4, bytes[comm.rank()]), all, bytes);
      for (size_t i = 0; i < total; ++i) {
        ASSERT_EQ(out[i], static_cast<int32_t>(i)) << "rank " << comm.rank() << " total " << total;
      }
    });
  }
}

// Every arena collective, many calls of changing sizes (one step and many) and roots back to
// back: a slot half is rewritten only once every rank is done reading it, whichever collective
// used it last.
TEST_P(ArenaCollectives, LongMixOfEveryCollective) {
  const int n = GetParam();
  auto group = arena_group(n);
  group.run([&](Communicator& comm) {
    const int rank = comm.rank();
    for (int call = 0; call < 150; ++call) {
      const size_t count = static_cast<size_t>((call * 7919) % 11000);
      const std::vector<size_t> counts = split(count, n);
      std::vector<size_t> bytes(counts);
      for (size_t& b : bytes) b *= 4;
      auto value = [&](int r, size_t i) { return static_cast<int32_t>(i * 3 + r * 1000 + call); };
      switch (call % 5) {
        case 0: {
          std::vector<int32_t> data(count);
          for (size_t i = 0; i < count; ++i) data[i] = value(rank, i);
          allreduce(comm, std::as_writable_bytes(std::span(data)), count, DataType::int32,
                    ReduceOp::sum, {AllreduceAlgorithm::shared_memory});
          for (size_t i = 0; i < count; ++i) {
            int32_t want = 0;
            for (int r = 0; r < n; ++r) want += value(r, i);
            ASSERT_EQ(data[i], want) << "allreduce call " << call << " rank " << rank;
          }
          break;
        }
        case 1: {
          std::vector<int32_t> mine(counts[static_cast<size_t>(rank)]);
          const size_t first = std::accumulate(counts.begin(), counts.begin() + rank, size_t{0});
          for (size_t i = 0; i < mine.size(); ++i) mine[i] = value(rank, first + i);
          std::vector<int32_t> out(count);
          allgatherv_shared_memory(comm, std::as_bytes(std::span(mine)),
                                   std::as_writable_bytes(std::span(out)), bytes);
          size_t i = 0;
          for (int r = 0; r < n; ++r) {
            for (size_t k = 0; k < counts[static_cast<size_t>(r)]; ++k, ++i) {
              ASSERT_EQ(out[i], value(r, i)) << "allgatherv call " << call << " rank " << rank;
            }
          }
          break;
        }
        case 2: {
          const int root = call % n;
          std::vector<int32_t> data(count);
          for (size_t i = 0; i < count; ++i) data[i] = value(rank, i);
          broadcast_shared_memory(comm, std::as_writable_bytes(std::span(data)), root);
          for (size_t i = 0; i < count; ++i) {
            ASSERT_EQ(data[i], value(root, i)) << "broadcast call " << call << " rank " << rank;
          }
          break;
        }
        case 3: {
          std::vector<int32_t> data(count);
          for (size_t i = 0; i < count; ++i) data[i] = value(rank, i);
          std::vector<int32_t> out(counts[static_cast<size_t>(rank)]);
          reducescatter_shared_memory(comm, std::as_writable_bytes(std::span(data)), counts,
                                      DataType::int32, ReduceOp::sum,
                                      std::as_writable_bytes(std::span(out)));
          const size_t first = std::accumulate(counts.begin(), counts.begin() + rank, size_t{0});
          for (size_t i = 0; i < out.size(); ++i) {
            int32_t want = 0;
            for (int r = 0; r < n; ++r) want += value(r, first + i);
            ASSERT_EQ(out[i], want) << "reducescatter call " << call << " rank " << rank;
          }
          break;
        }
        default: {
          // Rank s sends (s + d + call) % 3 * count / 4 + d int32s to rank d; one pair sends none.
          auto elements = [&](int s, int d) {
            return static_cast<size_t>((s + d + call) % 3) * count / 4 + static_cast<size_t>(d);
          };
          std::vector<size_t> send, recv;
          std::vector<int32_t> in, want;
          for (int d = 0; d < n; ++d) {
            send.push_back(elements(rank, d) * 4);
            for (size_t i = 0; i < elements(rank, d); ++i) in.push_back(value(rank * n + d, i));
          }
          for (int s = 0; s < n; ++s) {
            recv.push_back(elements(s, rank) * 4);
            for (size_t i = 0; i < elements(s, rank); ++i) want.push_back(value(s * n + rank, i));
          }
          std::vector<int32_t> out(want.size());
          alltoallv_shared_memory(comm, std::as_bytes(std::span(in)), send,
                                  std::as_writable_bytes(std::span(out)), recv);
          ASSERT_EQ(out, want) << "alltoallv call " << call << " rank " << rank;
        }
      }
    }
  });
}

// A slot half of 1 MiB, as the runtime sets it up: broadcast then cuts its buffer into pieces
// smaller than the half (128 KiB), and successive calls land their pieces in either half. Sizes
// around the piece (one element short, one over, uneven, more than a whole half, zero), every
// root, each call followed by an allreduce that rewrites the slot halves, whose steps must wait
// for the broadcast's readers.
TEST_P(ArenaCollectives, BroadcastInPiecesSmallerThanTheSlot) {
  const int n = GetParam();
  CommunicatorOptions options = testing::default_test_options();
  options.host_cpus = 64;
  RankThreads group(std::vector<CommunicatorOptions>(static_cast<size_t>(n), options),
                    LinkKind::shm, size_t{64} * 1024, std::nullopt, size_t{1} << 20, SIZE_MAX);
  constexpr size_t kPieceCount = size_t{128} * 1024 / 4;
  group.run([&](Communicator& comm) {
    comm.arena()->single_copy_allowed = false;  // the pieces, not one read (single_copy_test)
    const int rank = comm.rank();
    int call = 0;
    for (const size_t count : {kPieceCount - 1, kPieceCount + 1, 3 * kPieceCount + 7, size_t{0},
                               (size_t{1} << 20) / 4 * 2 + 13, size_t{1}}) {
      for (int root = 0; root < n; ++root, ++call) {
        auto value = [&](int r, size_t i) { return static_cast<int32_t>(i * 5 + r * 7 + call); };
        std::vector<int32_t> data(count);
        for (size_t i = 0; i < count; ++i) data[i] = value(rank, i);
        broadcast_shared_memory(comm, std::as_writable_bytes(std::span(data)), root);
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(data[i], value(root, i))
              << "broadcast of " << count << " from " << root << ", rank " << rank << ", at " << i;
        }
        std::vector<int32_t> sum(count / 3 + 1, rank + 1);
        allreduce(comm, std::as_writable_bytes(std::span(sum)), sum.size(), DataType::int32,
                  ReduceOp::sum, {AllreduceAlgorithm::shared_memory});
        for (const int32_t v : sum) ASSERT_EQ(v, n * (n + 1) / 2) << "allreduce after " << count;
      }
    }
  });
}

// The automatic choice: through the arena at every size on a host with CPUs to spare; on an
// oversubscribed one allgatherv and reducescatter only below 64 KiB; broadcast from 16 KiB and
// never oversubscribed; alltoallv always (its ranks cannot agree on a size); never with a zero
// limit.
TEST_P(ArenaCollectives, AutomaticChoice) {
  const int n = GetParam();
  for (const int cpus : {64, 1}) {
    for (const size_t limit : {SIZE_MAX, size_t{0}}) {
      auto group = arena_group(n, cpus, limit);
      group.run([&](Communicator& comm) {
        for (size_t count : {size_t{3}, size_t{100000}}) {
          const bool large = count * 4 >= size_t{64} * 1024;
          const bool sized = limit > 0 && (cpus > 1 || !large);
          const std::vector<size_t> counts = split(count, n);
          std::vector<size_t> bytes(counts);
          for (size_t& b : bytes) b *= 4;
          std::vector<std::byte> data(count * 4, std::byte{1}), out(count * 4);
          auto used = [&](const auto& run) {
            const uint64_t before = comm.arena()->steps;
            run();
            return comm.arena()->steps != before;
          };
          const auto mine = Bytes(data).first(bytes[static_cast<size_t>(comm.rank())]);
          EXPECT_EQ(used([&] { allgatherv(comm, mine, out, bytes); }), sized) << count;
          EXPECT_EQ(used([&] { broadcast(comm, data, n - 1); }), limit > 0 && cpus > 1 && large)
              << count;
          EXPECT_EQ(
              used([&] { reducescatter(comm, data, counts, DataType::int32, ReduceOp::sum, out); }),
              sized)
              << count;
          const std::vector<size_t> even(static_cast<size_t>(n), count / n * 4);
          EXPECT_EQ(used([&] { alltoallv(comm, data, even, out, even); }), limit > 0) << count;
        }
      });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ArenaCollectives, ::testing::Values(2, 3, 4));

// A subgroup that is not the whole host must not touch the arena: the explicit forms refuse,
// naming themselves, and the automatic ones fall back to the links.
TEST(ArenaCollectivesChoice, PartialSubgroupRefusesAndFallsBack) {
  auto group = arena_group(3);
  group.run([&](Communicator& comm) {
    if (comm.rank() == 2) return;
    const int pair[] = {0, 1};
    Communicator sub = subgroup(comm, pair);
    std::vector<std::byte> data(64, std::byte{7}), out(64);
    const std::vector<size_t> bytes{32, 32};
    const std::vector<size_t> counts{8, 8};
    try {
      broadcast_shared_memory(sub, data, 0);
      ADD_FAILURE() << "broadcast_shared_memory ran without an arena";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("broadcast_shared_memory needs"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(allgatherv_shared_memory(sub, Bytes(data).first(32), out, bytes), InvalidArgument);
    EXPECT_THROW(
        reducescatter_shared_memory(sub, data, counts, DataType::int32, ReduceOp::sum, out),
        InvalidArgument);
    EXPECT_THROW(alltoallv_shared_memory(sub, data, bytes, out, bytes), InvalidArgument);
    const uint64_t before = comm.arena()->steps;
    allgatherv(sub, Bytes(data).first(32), out, bytes);
    broadcast(sub, data, 1);
    alltoallv(sub, data, bytes, out, bytes);
    EXPECT_EQ(comm.arena()->steps, before);
    EXPECT_EQ(out[63], std::byte{7});
  });
}

// Hierarchical allreduce over fake hosts, each with its own arena: the host stages
// (reducescatter + allgatherv on even hosts; allreduce + broadcast on uneven ones) run on the
// arena, and the result matches the reference on every rank.
class ArenaHierarchy : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(ArenaHierarchy, HostStagesGoThroughTheArena) {
  Topology topology;
  topology.host_of_rank = GetParam();
  const int n = static_cast<int>(topology.host_of_rank.size());
  auto group = arena_group(n, 64, SIZE_MAX, topology);
  for (size_t count : {size_t{0}, size_t{1}, size_t{1001}, size_t{30011}}) {
    std::vector<std::vector<std::byte>> inputs;
    for (int r = 0; r < n; ++r) {
      inputs.push_back(kernels::testing::make_input(DataType::float32, ReduceOp::sum, r, count));
    }
    const auto expected =
        kernels::testing::reference_reduce(inputs, DataType::float32, ReduceOp::sum);
    group.run([&](Communicator& comm) {
      auto data = inputs[static_cast<size_t>(comm.rank())];
      const CollectiveArena* arena = comm.topology().host_arena.get();
      const uint64_t before = arena != nullptr ? arena->steps : 0;
      allreduce(comm, data, count, DataType::float32, ReduceOp::sum,
                {AllreduceAlgorithm::hierarchical});
      EXPECT_EQ(kernels::testing::first_difference(data, expected, DataType::float32), "")
          << "rank " << comm.rank() << " count " << count;
      if (arena != nullptr && count > 0) {
        EXPECT_GT(arena->steps, before) << "rank " << comm.rank() << " count " << count;
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(FakeHosts, ArenaHierarchy,
                         ::testing::Values(std::vector<int>{0, 0, 1, 1},
                                           std::vector<int>{0, 1, 0, 1},
                                           std::vector<int>{0, 0, 0, 1, 1, 1},
                                           std::vector<int>{0, 0, 1},
                                           std::vector<int>{0, 1, 1, 1, 2}));

// Rank 0, the root, closes its links while the others wait for it in an arena broadcast: every
// survivor names it as gone (seen through its links' hang-up, not after the peer timeout).
TEST(ArenaCollectivesFailure, RootThatLeavesIsNamedByEverySurvivor) {
  auto group = arena_group(3);
  const auto errors = group.run_collect(
      [&](Communicator& comm) {
        std::vector<std::byte> data(100000);
        if (comm.rank() == 0) {
          std::this_thread::sleep_for(300ms);
          comm.abort();
          return;
        }
        broadcast_shared_memory(comm, data, 0);
      },
      /*abort_on_error=*/false);
  EXPECT_FALSE(errors[0]);
  for (int r = 1; r < 3; ++r) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " did not fail";
    EXPECT_EQ(testing::peer_of(errors[r]), 0)
        << "rank " << r << ": " << testing::describe(errors[r]);
    EXPECT_NE(testing::describe(errors[r]).find("closed the connection"), std::string::npos)
        << testing::describe(errors[r]);
  }
}

}  // namespace
}  // namespace kolo::comm
