// Single-copy transfers through the host's arena (comm/single_copy.h): from 32 KiB allgatherv,
// broadcast and alltoallv read the peers' buffers straight from their memory, with the same
// results as the two copies (uneven and empty blocks, every root, an alltoallv where one rank's
// blocks are read and the others' copied over several steps of a small slot), once every
// member has said it can; one
// member that may not (KOLO_SHM_SINGLE_COPY=0) keeps every member on two copies. Threads as
// ranks: process_vm_readv(2) on its own pid reads this process, as a peer's read would.
#include "comm/single_copy.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "base/errors.h"
#include "comm/collective_arena.h"
#include "comm/collectives.h"
#include "comm/rank_threads.h"

namespace kolo::comm {
namespace {

using testing::LinkKind;
using testing::RankThreads;
using SingleCopy = CollectiveArena::SingleCopy;

RankThreads arena_ranks(int n, int host_cpus = 64) {
  CommunicatorOptions options = testing::default_test_options();
  options.host_cpus = host_cpus;
  return RankThreads(std::vector<CommunicatorOptions>(static_cast<size_t>(n), options),
                     LinkKind::shm, size_t{64} * 1024, std::nullopt, size_t{16} * 1024, SIZE_MAX);
}

int32_t value(int rank, size_t i, int call) {
  return static_cast<int32_t>(i * 3 + rank * 11 + call);
}

// Allgathers with one block empty and the largest past the single-copy threshold, then
// broadcasts from every root at sizes either side of the threshold; returns how the arena moved
// them.
SingleCopy gather_and_broadcast(Communicator& comm) {
  comm.arena()->single_copy_measured = false;  // from kSingleCopyMinBytes, whatever reads cost
  const int n = comm.size();
  const int rank = comm.rank();
  int call = 0;
  for (const size_t largest : {detail::kSingleCopyMinBytes / 4 + 5, size_t{300000}}) {
    std::vector<size_t> counts;
    for (int r = 0; r < n; ++r) counts.push_back(r == 1 ? 0 : largest - static_cast<size_t>(r));
    std::vector<size_t> bytes(counts);
    for (size_t& b : bytes) b *= 4;
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    std::vector<int32_t> mine(counts[static_cast<size_t>(rank)]);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = value(rank, i, call);
    std::vector<int32_t> out(total, -1);
    allgatherv_shared_memory(comm, std::as_bytes(std::span(mine)),
                             std::as_writable_bytes(std::span(out)), bytes);
    size_t at = 0;
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < counts[static_cast<size_t>(r)]; ++i, ++at) {
        EXPECT_EQ(out[at], value(r, i, call)) << "rank " << rank << ", block " << r << " at " << i;
      }
    }
    ++call;
  }
  for (const size_t count : {size_t{4000}, detail::kSingleCopyMinBytes / 4, size_t{200001}}) {
    for (int root = 0; root < n; ++root, ++call) {
      std::vector<int32_t> data(count);
      for (size_t i = 0; i < count; ++i) data[i] = value(rank, i, call);
      broadcast_shared_memory(comm, std::as_writable_bytes(std::span(data)), root);
      for (size_t i = 0; i < count; ++i) {
        EXPECT_EQ(data[i], value(root, i, call)) << count << " from " << root << ", rank " << rank;
      }
    }
  }
  // Rank 0's blocks past the threshold (read from its memory), the others' below it but larger
  // than a slot region (copied in several steps), one pair empty.
  auto block = [&](int from, int to) -> size_t {
    if (from == to || (from == 1 && to == 0)) return from == to ? 7 : 0;
    return from == 0 ? detail::kSingleCopyMinBytes / 4 + 3 + static_cast<size_t>(to)
                     : size_t{5000} + static_cast<size_t>(from * 10 + to);
  };
  std::vector<size_t> send_bytes, recv_bytes;
  size_t send_total = 0, recv_total = 0;
  for (int r = 0; r < n; ++r) {
    send_bytes.push_back(block(rank, r) * 4);
    recv_bytes.push_back(block(r, rank) * 4);
    send_total += block(rank, r);
    recv_total += block(r, rank);
  }
  std::vector<int32_t> in(send_total), out(recv_total, -1);
  size_t at = 0;
  for (int d = 0; d < n; ++d) {
    for (size_t i = 0; i < block(rank, d); ++i)
      in[at++] = value(rank, i + 1000 * static_cast<size_t>(d), call);
  }
  alltoallv_shared_memory(comm, std::as_bytes(std::span(in)), send_bytes,
                          std::as_writable_bytes(std::span(out)), recv_bytes);
  at = 0;
  for (int s = 0; s < n; ++s) {
    for (size_t i = 0; i < block(s, rank); ++i, ++at) {
      EXPECT_EQ(out[at], value(s, i + 1000 * static_cast<size_t>(rank), call))
          << "rank " << rank << ", block from " << s << " at " << i;
    }
  }
  return comm.arena()->single_copy;
}

class SingleCopyRanks : public ::testing::TestWithParam<int> {};

TEST_P(SingleCopyRanks, EveryMemberReadsItsPeersBuffersOnce) {
  auto group = arena_ranks(GetParam());
  group.run([&](Communicator& comm) { EXPECT_EQ(gather_and_broadcast(comm), SingleCopy::usable); });
}

TEST_P(SingleCopyRanks, OneMemberThatMayNotKeepsEveryMemberOnTwoCopies) {
  auto group = arena_ranks(GetParam());
  group.run([&](Communicator& comm) {
    comm.arena()->single_copy_allowed = comm.rank() != 1;
    EXPECT_EQ(gather_and_broadcast(comm), SingleCopy::unusable);
  });
}

// Broadcasts of odd byte counts from every root, each receiver's buffer compared byte for byte
// with the root's: with a CPU per rank the root writes the tail of every receiver's buffer while
// it reads the head (split_copy_step), also past the 1 MiB where the receivers alone used to stop;
// oversubscribed the receivers read it whole (up to 1 MiB) or through the slots.
TEST_P(SingleCopyRanks, BroadcastOfOddSizesArrivesBitForBit) {
  for (const int cpus : {64, 1}) {
    auto group = arena_ranks(GetParam(), cpus);
    group.run([&](Communicator& comm) {
      ASSERT_EQ(comm.oversubscribed(), cpus == 1);
      int call = 0;
      for (const size_t bytes :
           {detail::kSingleCopyMinBytes + 3, size_t{1} << 20 | 13, (size_t{3} << 20) + 1}) {
        for (int root = 0; root < comm.size(); ++root, ++call) {
          std::vector<uint8_t> data(bytes);
          for (size_t i = 0; i < bytes; ++i) {
            data[i] = static_cast<uint8_t>(value(comm.rank(), i * 7, call));
          }
          broadcast_shared_memory(comm, std::as_writable_bytes(std::span(data)), root);
          size_t wrong = 0, first = bytes;
          for (size_t i = 0; i < bytes; ++i) {
            if (data[i] != static_cast<uint8_t>(value(root, i * 7, call))) {
              ++wrong;
              first = std::min(first, i);
            }
          }
          EXPECT_EQ(wrong, 0U) << bytes << " bytes from " << root << ", rank " << comm.rank()
                               << ", first wrong at " << first << ", " << cpus << " CPUs";
        }
      }
      EXPECT_EQ(comm.arena()->single_copy, SingleCopy::usable);
    });
  }
}

// The pid of a process that has exited and been reaped: reading its memory fails with ESRCH, as
// a peer's read of a rank killed mid-collective does (its memory goes before its sockets close).
uint64_t pid_of_a_gone_process() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return static_cast<uint64_t>(child);
}

// A peer whose process is gone while its block is read is a lost peer (PeerError naming it), not
// a system error: the survivor then looks up the root cause and waits for the launcher's report,
// instead of exiting at once and being reported by kolorun as the job's first failure.
TEST(SingleCopyFailure, ReadingTheBlockOfAGoneProcessNamesThePeerAsLost) {
  const uint64_t gone = pid_of_a_gone_process();
  auto group = arena_ranks(2);
  std::barrier published(2);
  group.run([&](Communicator& comm) {
    ASSERT_TRUE(detail::single_copy_usable(comm, *comm.arena()));
    std::vector<std::byte> buffer(detail::kSingleCopyMinBytes);
    CollectiveArena& collective = *comm.arena();
    if (comm.rank() == 1) {
      const detail::PeerBlock block{gone, reinterpret_cast<uint64_t>(buffer.data()), buffer.size()};
      std::memcpy(collective.host.arena->slot(collective.host.slot, 0), &block, sizeof(block));
    }
    published.arrive_and_wait();
    if (comm.rank() == 0) {
      try {
        detail::read_block(comm, collective, 1, 0, 0, buffer.data(), buffer.size());
        ADD_FAILURE() << "reading a gone process's memory succeeded";
      } catch (const PeerError& error) {
        EXPECT_EQ(error.peer_rank(), 1);
        EXPECT_EQ(error.kind(), PeerError::Kind::closed);
        const std::string message = error.what();
        EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
        EXPECT_NE(message.find("exited or was killed"), std::string::npos) << message;
      } catch (const Error& error) {
        ADD_FAILURE() << "not reported as a lost peer: " << error.what();
      }
    }
    published.arrive_and_wait();
  });
}

// The probe's timings choose the block size from which allgather and alltoall read, the same
// on every member whatever each measured (which size it is depends on this machine's costs, so
// only the agreement and the two possible answers are asserted).
TEST_P(SingleCopyRanks, MeasuredProbeChoosesOneBlockSizeOnEveryMember) {
  RankThreads group = arena_ranks(GetParam());
  std::vector<size_t> chosen(static_cast<size_t>(GetParam()));
  group.run([&](Communicator& comm) {
    ASSERT_TRUE(comm.arena()->single_copy_measured);  // the default
    chosen[static_cast<size_t>(comm.rank())] = detail::single_copy_blocks_from(comm, *comm.arena());
  });
  EXPECT_TRUE(chosen[0] == detail::kSingleCopyMinBytes || chosen[0] == detail::kSingleCopyDramBytes)
      << chosen[0];
  for (const size_t each : chosen) EXPECT_EQ(each, chosen[0]);
}

TEST_P(SingleCopyRanks, UnmeasuredReadsFromTheMinimumAndDisallowedNever) {
  RankThreads group = arena_ranks(GetParam());
  group.run([&](Communicator& comm) {
    comm.arena()->single_copy_measured = false;
    EXPECT_EQ(detail::single_copy_blocks_from(comm, *comm.arena()), detail::kSingleCopyMinBytes);
  });
  RankThreads refusing = arena_ranks(GetParam());
  refusing.run([&](Communicator& comm) {
    comm.arena()->single_copy_allowed = comm.rank() != 0;
    EXPECT_EQ(detail::single_copy_blocks_from(comm, *comm.arena()), SIZE_MAX);
  });
}

TEST(SingleCopyVerdict, ReadsPayWhenTheirSumIsNoMoreThanTheCopiesSum) {
  using Times = std::vector<uint64_t>;
  EXPECT_TRUE(detail::single_copy_pays(Times{10, 12}, Times{20, 25}));
  EXPECT_FALSE(detail::single_copy_pays(Times{40, 30}, Times{20, 25}));
  EXPECT_TRUE(detail::single_copy_pays(Times{0, 0, 0}, Times{0, 0, 0}));  // nobody measured
  EXPECT_TRUE(detail::single_copy_pays(Times{30, 30}, Times{40, 20}));    // a tie: reads
  // One member's slow read outweighs the others' fast ones: every member decides alike.
  EXPECT_FALSE(detail::single_copy_pays(Times{5, 5, 100}, Times{20, 20, 20}));
}

INSTANTIATE_TEST_SUITE_P(Ranks, SingleCopyRanks, ::testing::Values(2, 3));

}  // namespace
}  // namespace kolo::comm
