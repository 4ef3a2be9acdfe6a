// Communicator: construction checks, topology, exchange (concurrency, ordering, many peers),
// frames, and the idle wait.
#include "comm/communicator.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <numeric>
#include <thread>

#include "base/errors.h"
#include "comm/rank_threads.h"
#include "comm/subgroup.h"
#include "kernels/typed_values.h"

namespace kolo::comm {
namespace {

using namespace std::chrono_literals;
using testing::RankThreads;

std::vector<std::byte> pattern(size_t size, uint64_t seed) {
  std::vector<std::byte> data(size);
  for (size_t i = 0; i < size; ++i)
    data[i] = std::byte(static_cast<uint8_t>(kernels::testing::mix(seed + i / 8) >> (i % 8 * 8)));
  return data;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(Topology, HostsAndRanks) {
  Topology t{{0, 0, 1, 2, 1}, nullptr};
  EXPECT_EQ(t.num_hosts(), 3);
  EXPECT_EQ(t.ranks_on_host(1), (std::vector<int>{2, 4}));
  EXPECT_TRUE(t.ranks_on_host(7).empty());
  EXPECT_EQ(Topology::flat(3, true).host_of_rank, (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(Topology::flat(3, false).host_of_rank, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(Topology::flat(3, false).num_hosts(), 3);
  EXPECT_EQ(Topology{}.num_hosts(), 0);
}

TEST(Communicator, ConstructionChecks) {
  RankThreads group(2);
  Link* link = &group.comm(0).peer(1);
  EXPECT_THROW(Communicator(2, {nullptr, link}, Topology::flat(2, true), {}), InvalidArgument);
  EXPECT_THROW(Communicator(0, {nullptr, nullptr}, Topology::flat(2, true), {}), InvalidArgument);
  EXPECT_THROW(Communicator(0, {nullptr, link}, Topology::flat(3, true), {}), InvalidArgument);
  Communicator single(0, {nullptr}, Topology{}, {});
  EXPECT_EQ(single.size(), 1);
  EXPECT_EQ(single.topology().num_hosts(), 1);
  EXPECT_THROW(single.peer(0), InvalidArgument);
  EXPECT_THROW(group.comm(0).peer(0), InvalidArgument);
  EXPECT_THROW(group.comm(0).peer(2), InvalidArgument);
  EXPECT_EQ(group.comm(1).peer(0).peer_rank(), 0);
}

// The ring's work buffer is allocated once and reused, also by subgroups made from the
// communicator (a hierarchical allreduce builds them on every call).
TEST(Communicator, ScratchIsReusedAndSharedWithSubgroups) {
  RankThreads group(3);
  Communicator& comm = group.comm(0);
  std::byte* first = comm.scratch(1000).data();
  EXPECT_EQ(comm.scratch(10).data(), first);
  EXPECT_EQ(comm.scratch(1000).size(), 1000u);
  std::byte* grown = comm.scratch(1 << 20).data();
  EXPECT_EQ(comm.scratch(4096).data(), grown);
  const int members[] = {0, 2};
  Communicator sub = subgroup(comm, members);
  EXPECT_EQ(sub.scratch(100).data(), grown);
}

// A link that only remembers what the communicators sharing it said about oversubscription.
class OversubscriptionProbe final : public Link {
 public:
  explicit OversubscriptionProbe(int peer) : peer_(peer) {}
  size_t send_some(ConstBytes /*data*/) override { return 0; }
  size_t recv_some(Bytes /*data*/) override { return 0; }
  [[nodiscard]] int fd() const override { return -1; }
  void set_oversubscribed(bool oversubscribed) override { told_ = oversubscribed; }
  [[nodiscard]] int peer_rank() const override { return peer_; }
  [[nodiscard]] const std::string& peer_description() const override { return description_; }
  void close() override {}
  int told_ = -1;  // -1: never told

 private:
  int peer_;
  std::string description_ = "probe";
};

// Oversubscription is the host's: three ranks on a 2-CPU host stay oversubscribed in a
// subgroup (a process set) of two of them, and the links the subgroup shares with the whole
// group are not told otherwise by it.
TEST(Communicator, SubgroupsKeepTheHostsOversubscription) {
  for (const int cpus : {2, 3}) {
    OversubscriptionProbe to1(1);
    OversubscriptionProbe to2(2);
    CommunicatorOptions options;
    options.host_cpus = cpus;
    Communicator world(0, {nullptr, &to1, &to2}, Topology::flat(3, /*one_host=*/true), options);
    const bool busy = cpus < 3;
    EXPECT_EQ(world.oversubscribed(), busy) << cpus << " CPUs";
    EXPECT_EQ(world.host_ranks(), 3);
    const int members[] = {0, 1};
    Communicator pair = subgroup(world, members);
    EXPECT_EQ(pair.oversubscribed(), busy) << cpus << " CPUs";
    EXPECT_EQ(pair.host_ranks(), 3);
    EXPECT_EQ(to1.told_, busy ? 1 : 0) << cpus << " CPUs";
    EXPECT_EQ(to2.told_, busy ? 1 : 0) << cpus << " CPUs";
    const int self[] = {0};
    EXPECT_EQ(subgroup(pair, self).oversubscribed(), busy) << "a subgroup of a subgroup";
  }
}

TEST(Communicator, BothDirectionsAtOnceDoNotDeadlock) {
  // Far more than the kernel buffers: blocking sends on both sides would deadlock.
  const size_t size = 16u << 20;
  const auto data0 = pattern(size, 1), data1 = pattern(size, 2);
  RankThreads group(2);
  group.run([&](Communicator& comm) {
    const int other = 1 - comm.rank();
    std::vector<std::byte> in(size);
    comm.send_recv(other, comm.rank() == 0 ? data0 : data1, other, in);
    EXPECT_TRUE(in == (comm.rank() == 0 ? data1 : data0));
  });
}

TEST(Communicator, TransfersToOnePeerKeepTheirOrder) {
  const auto a = pattern(100000, 3), c = pattern(300001, 4);
  RankThreads group(2);
  group.run([&](Communicator& comm) {
    if (comm.rank() == 0) {
      const SendOp sends[3] = {{1, a}, {1, {}}, {1, c}};
      comm.exchange(sends, {});
    } else {
      // Split differently from the sender: the stream, not the op boundaries, must line up.
      std::vector<std::byte> first(150000), second(250001);
      const RecvOp recvs[2] = {{0, first}, {0, second}};
      comm.exchange({}, recvs);
      std::vector<std::byte> joined = first;
      joined.insert(joined.end(), second.begin(), second.end());
      std::vector<std::byte> expected = a;
      expected.insert(expected.end(), c.begin(), c.end());
      EXPECT_TRUE(joined == expected);
    }
  });
}

TEST(Communicator, ReceivesFromManyPeersConcurrently) {
  const int n = 5;
  const size_t size = 1u << 20;
  RankThreads group(n);
  group.run([&](Communicator& comm) {
    if (comm.rank() != 0) {
      comm.send(0, pattern(size, static_cast<uint64_t>(comm.rank())));
      return;
    }
    std::vector<std::vector<std::byte>> in(n, std::vector<std::byte>(size));
    std::vector<RecvOp> recvs;
    for (int r = 1; r < n; ++r) recvs.push_back({r, in[r]});
    comm.exchange({}, recvs);
    for (int r = 1; r < n; ++r) EXPECT_TRUE(in[r] == pattern(size, static_cast<uint64_t>(r))) << r;
  });
}

// A lone send or receive first tries once outside the loop (exchange's fast path): here the
// first try moves only part (a message larger than the link's buffer; a receive posted before
// the sender starts moves nothing) or all of it (a few bytes already waiting), and the rest must
// follow through the loop in order. Over sockets and shared-memory links, odd sizes.
TEST(Communicator, LoneTransfersFinishWhatTheFirstTryLeft) {
  for (const auto kind : {testing::LinkKind::socket, testing::LinkKind::shm}) {
    const auto big = pattern((size_t{3} << 20) + 5, 7), small = pattern(13, 8);
    RankThreads group(2, kind, size_t{64} * 1024);
    group.run([&](Communicator& comm) {
      if (comm.rank() == 0) {
        comm.send(1, big);  // more than the ring (64 KiB) or a socket buffer holds
        comm.send(1, small);
        std::this_thread::sleep_for(50ms);  // the receive below waits in the loop
        comm.send(1, small);
        return;
      }
      std::this_thread::sleep_for(50ms);  // the sender's first try fills the buffer only
      std::vector<std::byte> in(big.size()), few(small.size()), later(small.size());
      comm.recv(0, in);
      comm.recv(0, few);  // already waiting: done at the first try
      comm.recv(0, later);
      EXPECT_TRUE(in == big);
      EXPECT_TRUE(few == small);
      EXPECT_TRUE(later == small);
    });
  }
}

TEST(Communicator, ZeroLengthAndInvalidPeers) {
  RankThreads group(2);
  group.comm(0).exchange({}, {});
  group.comm(0).send(1, {});
  group.comm(0).recv(1, {});
  std::byte b{};
  EXPECT_THROW(group.comm(0).send(0, {&b, 1}), InvalidArgument);
  EXPECT_THROW(group.comm(0).recv(5, {&b, 1}), InvalidArgument);
}

TEST(Communicator, PingPongWithAndWithoutSpinning) {
  for (auto spin : {0us, 20us}) {
    CommunicatorOptions options = testing::default_test_options();
    options.spin_before_poll = spin;
    RankThreads group(2, options);
    const int rounds = 2000;
    const auto start = std::chrono::steady_clock::now();
    group.run([&](Communicator& comm) {
      std::byte token{0};
      for (int i = 0; i < rounds; ++i) {
        if (comm.rank() == 0) {
          token = std::byte(static_cast<uint8_t>(i));
          comm.send(1, {&token, 1});
          comm.recv(1, {&token, 1});
          ASSERT_EQ(token, std::byte(static_cast<uint8_t>(i + 1)));
        } else {
          comm.recv(0, {&token, 1});
          token = std::byte(static_cast<uint8_t>(static_cast<uint8_t>(token) + 1));
          comm.send(0, {&token, 1});
        }
      }
    });
    std::printf("spin %lld us: round trip %.1f us\n", static_cast<long long>(spin.count()),
                seconds_since(start) * 1e6 / rounds);
  }
}

TEST(Communicator, FramesRoundTrip) {
  const std::vector<size_t> sizes = {0, 1, 4096, 4097, 1u << 20};
  RankThreads group(2);
  group.run([&](Communicator& comm) {
    for (size_t size : sizes) {
      if (comm.rank() == 0) {
        comm.send_frame(1, pattern(size, size));
      } else {
        EXPECT_TRUE(comm.recv_frame(0) == pattern(size, size)) << size;
      }
    }
  });
}

TEST(Communicator, FrameOverTheLimitIsAProtocolError) {
  std::vector<CommunicatorOptions> options(2, testing::default_test_options());
  options[0].frame_limit = 1000;
  RankThreads group(options);
  const auto errors = group.run_collect([&](Communicator& comm) {
    if (comm.rank() == 1) {
      comm.send_frame(0, pattern(2000, 1));
    } else {
      comm.recv_frame(1);
    }
  });
  ASSERT_TRUE(errors[0]);
  EXPECT_THROW(std::rethrow_exception(errors[0]), ProtocolError);
  EXPECT_NE(testing::describe(errors[0]).find("rank 1"), std::string::npos)
      << testing::describe(errors[0]);
  // The sender refuses frames over its own limit before sending anything.
  EXPECT_THROW(group.comm(0).send_frame(1, pattern(1001, 1)), InvalidArgument);
}

TEST(WaitIdle, ReturnsAfterTimeout) {
  RankThreads group(3);
  const auto start = std::chrono::steady_clock::now();
  group.comm(0).wait_idle(-1, 50ms);
  const double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 0.045);
  EXPECT_LT(elapsed, 2.0);
}

TEST(WaitIdle, ReturnsWhenWoken) {
  RankThreads group(2);
  const int wake = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(wake, 0);
  std::thread waker([&] {
    std::this_thread::sleep_for(50ms);
    const uint64_t one = 1;
    ASSERT_EQ(::write(wake, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  });
  const auto start = std::chrono::steady_clock::now();
  group.comm(0).wait_idle(wake, 10s);
  EXPECT_LT(seconds_since(start), 5.0);
  waker.join();
  ::close(wake);
}

TEST(WaitIdle, ReturnsWhenAPeerStartsTheNextCycle) {
  // A peer that already sent (entered the next lockstep cycle) wakes an idle rank at once.
  RankThreads group(3);
  std::thread sender([&] {
    std::this_thread::sleep_for(50ms);
    const std::byte token{7};
    group.comm(2).send(0, ConstBytes(&token, 1));
  });
  const auto start = std::chrono::steady_clock::now();
  group.comm(0).wait_idle(-1, 10s);
  EXPECT_LT(seconds_since(start), 5.0);
  sender.join();
  std::byte received{};
  group.comm(0).recv(2, Bytes(&received, 1));
  EXPECT_EQ(received, std::byte{7});
}

TEST(WaitIdle, PeerThatClosesIsAnError) {
  RankThreads group(3);
  std::thread closer([&] {
    std::this_thread::sleep_for(50ms);
    group.comm(2).abort();
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    group.comm(0).wait_idle(-1, 10s);
    ADD_FAILURE() << "no error";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.peer_rank(), 2);
    EXPECT_NE(std::string(e.what()).find("rank 2 (socketpair) closed the connection"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(seconds_since(start), 5.0);
  closer.join();
}

TEST(WaitIdle, PeerThatLeftDataIsReportedOnlyWhenRead) {
  RankThreads group(2);
  const auto message = pattern(100, 9);
  group.comm(1).send(0, message);
  group.comm(1).abort();
  // Its bytes are still ours to read: idling is not an error.
  group.comm(0).wait_idle(-1, 20ms);
  std::vector<std::byte> in(100);
  group.comm(0).recv(1, in);
  EXPECT_TRUE(in == message);
  std::byte more{};
  try {
    group.comm(0).recv(1, {&more, 1});
    ADD_FAILURE() << "no error";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.peer_rank(), 1);
  }
  EXPECT_THROW(group.comm(0).wait_idle(-1, 10s), PeerError);
}

}  // namespace
}  // namespace kolo::comm
