#include "negotiation/coordinator.h"

#include <gtest/gtest.h>

#include "base/errors.h"
#include "negotiation/request_checks.h"

namespace kolo::negotiation {
namespace {

Request allreduce(int rank, std::string name, std::vector<int64_t> shape = {4, 3}) {
  Request r;
  r.rank = rank;
  r.name = std::move(name);
  r.op = OpType::allreduce;
  r.dtype = DataType::float32;
  r.shape = std::move(shape);
  return r;
}

RequestList list_of(std::vector<Request> requests, bool shutdown = false) {
  return RequestList{std::move(requests), shutdown};
}

std::vector<std::string> names_of(const ResponseList& list) {
  std::vector<std::string> names;
  for (const auto& r : list.responses) names.push_back(r.names.at(0));
  return names;
}

// Every rank submits a request built by make(rank); returns the one response.
Response run_one(int size, const std::function<Request(int)>& make) {
  Coordinator coordinator(size);
  for (int r = 0; r < size; ++r) coordinator.add(list_of({make(r)}), r);
  ResponseList out = coordinator.take_responses();
  EXPECT_EQ(out.responses.size(), 1u);
  EXPECT_EQ(coordinator.pending_count(), 0u);
  return out.responses.at(0);
}

TEST(DescribeRanksTest, Forms) {
  EXPECT_EQ(describe_ranks({}), "no rank");
  EXPECT_EQ(describe_ranks({3}), "rank 3");
  EXPECT_EQ(describe_ranks({2, 0}), "rank 0 and rank 2");
  EXPECT_EQ(describe_ranks({0, 2, 5}), "ranks 0, 2 and 5");
  EXPECT_EQ(describe_ranks({7, 0, 1, 2, 3, 5}), "ranks 0-3, 5 and 7");
  EXPECT_EQ(describe_ranks({4, 5, 6}), "ranks 4-6");
}

TEST(CoordinatorTest, MatchesAcrossSubmissionOrdersAndCycles) {
  Coordinator coordinator(3);
  coordinator.add(list_of({allreduce(0, "a"), allreduce(0, "b"), allreduce(0, "c")}), 0);
  coordinator.add(list_of({allreduce(1, "c"), allreduce(1, "a")}), 1);
  coordinator.add(list_of({allreduce(2, "b")}), 2);
  EXPECT_TRUE(coordinator.take_responses().responses.empty());
  EXPECT_EQ(coordinator.pending_count(), 3u);

  // Next cycle: rank 2 completes c then a; rank 1 completes b.
  coordinator.add(list_of({}), 0);
  coordinator.add(list_of({allreduce(1, "b")}), 1);
  coordinator.add(list_of({allreduce(2, "c"), allreduce(2, "a")}), 2);
  ResponseList out = coordinator.take_responses();
  EXPECT_EQ(names_of(out), (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_FALSE(out.shutdown);
  for (const auto& r : out.responses) {
    EXPECT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.dtype, DataType::float32);
  }
  EXPECT_EQ(coordinator.pending_count(), 0u);
  EXPECT_TRUE(coordinator.take_responses().responses.empty());
}

TEST(CoordinatorTest, SingleRankCompletesImmediately) {
  Coordinator coordinator(1);
  coordinator.add(list_of({allreduce(0, "x"), allreduce(0, "y")}), 0);
  EXPECT_EQ(names_of(coordinator.take_responses()), (std::vector<std::string>{"x", "y"}));
}

TEST(CoordinatorTest, ResponseCarriesParameters) {
  Response r = run_one(2, [](int rank) {
    Request q = allreduce(rank, "w");
    q.reduce_op = UserReduceOp::average;
    q.dtype = DataType::float16;
    q.prescale = 0.5;
    q.postscale = 0.25;
    q.process_set = 3;
    q.device = DeviceKind::cuda;
    q.device_index = rank;  // differs per rank: not compared
    return q;
  });
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.names, std::vector<std::string>{"w"});
  EXPECT_EQ(r.reduce_op, UserReduceOp::average);
  EXPECT_EQ(r.dtype, DataType::float16);
  EXPECT_EQ(r.prescale, 0.5);
  EXPECT_EQ(r.postscale, 0.25);
  EXPECT_EQ(r.process_set, 3);
  EXPECT_EQ(r.device, DeviceKind::cuda);
}

TEST(CoordinatorTest, MismatchedDtypeNamesTensorRanksAndValues) {
  Response r = run_one(3, [](int rank) {
    Request q = allreduce(rank, "grad.fc1");
    q.dtype = rank == 1 ? DataType::float16 : DataType::float32;
    return q;
  });
  EXPECT_EQ(r.error,
            "Mismatched dtype for tensor 'grad.fc1': rank 0 and rank 2 submitted float32, "
            "rank 1 submitted float16");
  EXPECT_EQ(r.names, std::vector<std::string>{"grad.fc1"});
}

struct MismatchCase {
  std::string label;
  int size;
  std::function<Request(int)> make;
  std::string expected;
};

class CoordinatorMismatchTest : public ::testing::TestWithParam<MismatchCase> {};

TEST_P(CoordinatorMismatchTest, ExactMessage) {
  const MismatchCase& c = GetParam();
  EXPECT_EQ(run_one(c.size, c.make).error, c.expected);
}

Request with_op(int rank, OpType op, std::vector<int64_t> shape = {4, 3}) {
  Request q = allreduce(rank, "t", std::move(shape));
  q.op = op;
  return q;
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, CoordinatorMismatchTest,
    ::testing::Values(
        MismatchCase{
            "op", 2,
            [](int r) { return with_op(r, r == 0 ? OpType::allreduce : OpType::broadcast); },
            "Mismatched op for tensor 't': rank 0 submitted allreduce, rank 1 submitted "
            "broadcast"},
        MismatchCase{"shape", 4,
                     [](int r) {
                       return allreduce(
                           r, "t",
                           r == 3 ? std::vector<int64_t>{4, 2} : std::vector<int64_t>{4, 3});
                     },
                     "Mismatched shape for tensor 't': ranks 0-2 submitted [4, 3], rank 3 "
                     "submitted [4, 2]"},
        MismatchCase{"reduce op", 2,
                     [](int r) {
                       Request q = allreduce(r, "t");
                       q.reduce_op = r == 0 ? UserReduceOp::sum : UserReduceOp::max;
                       return q;
                     },
                     "Mismatched reduce op for tensor 't': rank 0 submitted sum, rank 1 submitted "
                     "max"},
        MismatchCase{"prescale", 2,
                     [](int r) {
                       Request q = allreduce(r, "t");
                       q.prescale = r == 0 ? 1.0 : 0.5;
                       return q;
                     },
                     "Mismatched prescale factor for tensor 't': rank 0 submitted 1, rank 1 "
                     "submitted 0.5"},
        MismatchCase{"postscale", 3,
                     [](int r) {
                       Request q = allreduce(r, "t");
                       q.postscale = r == 2 ? 0.25 : 1.0;
                       return q;
                     },
                     "Mismatched postscale factor for tensor 't': rank 0 and rank 1 submitted 1, "
                     "rank 2 submitted 0.25"},
        MismatchCase{
            "device", 2,
            [](int r) {
              Request q = allreduce(r, "t");
              q.device = r == 1 ? DeviceKind::cuda : DeviceKind::cpu;
              return q;
            },
            "Mismatched device for tensor 't': rank 0 submitted cpu, rank 1 submitted cuda"},
        MismatchCase{
            "device, a CUDA tensor through host memory", 2,
            [](int r) {
              Request q = allreduce(r, "t");
              q.device = r == 0 ? DeviceKind::cuda_through_host : DeviceKind::cpu;
              return q;
            },
            "Mismatched device for tensor 't': rank 0 submitted cuda (through host memory), "
            "rank 1 submitted cpu"},
        MismatchCase{
            "process set", 2,
            [](int r) {
              Request q = allreduce(r, "t");
              q.process_set = r;
              return q;
            },
            "Mismatched process set for tensor 't': rank 0 submitted 0, rank 1 submitted 1"},
        MismatchCase{"broadcast shape", 2,
                     [](int r) { return with_op(r, OpType::broadcast, {r + 1}); },
                     "Mismatched shape for tensor 't': rank 0 submitted [1], rank 1 submitted [2]"},
        MismatchCase{"broadcast root", 3,
                     [](int r) {
                       Request q = with_op(r, OpType::broadcast);
                       q.root = r == 0 ? 0 : 1;
                       return q;
                     },
                     "Mismatched root rank for tensor 't': rank 0 submitted 0, rank 1 and rank 2 "
                     "submitted 1"},
        MismatchCase{"broadcast root out of range", 2,
                     [](int r) {
                       Request q = with_op(r, OpType::broadcast);
                       q.root = 5;
                       return q;
                     },
                     "Invalid root rank 5 for broadcast of tensor 't': the group has 2 ranks"},
        MismatchCase{"allgather ndims", 2,
                     [](int r) {
                       return with_op(
                           r, OpType::allgather,
                           r == 0 ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{2});
                     },
                     "Mismatched number of dimensions for tensor 't': rank 0 submitted 2, rank 1 "
                     "submitted 1"},
        MismatchCase{"allgather trailing dims", 3,
                     [](int r) {
                       return with_op(r, OpType::allgather, {r + 1, r == 2 ? 5 : 3});
                     },
                     "Mismatched shape (all dimensions but the first) for tensor 't': rank 0 and "
                     "rank 1 submitted [*, 3], rank 2 submitted [*, 5]"},
        MismatchCase{"allgather scalar", 2, [](int r) { return with_op(r, OpType::allgather, {}); },
                     "Cannot allgather tensor 't': it has no dimensions (a scalar)"},
        MismatchCase{"allgather dtype", 2,
                     [](int r) {
                       Request q = with_op(r, OpType::allgather);
                       q.dtype = r == 0 ? DataType::int64 : DataType::int32;
                       return q;
                     },
                     "Mismatched dtype for tensor 't': rank 0 submitted int64, rank 1 submitted "
                     "int32"}),
    [](const auto& info) {
      std::string name = info.param.label;
      for (char& ch : name) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(CoordinatorTest, AllgatherFillsFirstDimsPerRank) {
  Response r = run_one(3, [](int rank) { return with_op(rank, OpType::allgather, {rank * 2, 5}); });
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.first_dims, (std::vector<int64_t>{0, 2, 4}));
}

TEST(CoordinatorTest, BarrierComparesNothingButOp) {
  Response r = run_one(2, [](int rank) {
    Request q = with_op(rank, OpType::barrier, {rank});
    q.dtype = rank == 0 ? DataType::uint8 : DataType::float64;
    return q;
  });
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.op, OpType::barrier);
}

TEST(CoordinatorTest, MismatchLeavesOtherTensorsUnaffected) {
  Coordinator coordinator(2);
  Request bad0 = allreduce(0, "bad");
  Request bad1 = allreduce(1, "bad", {9});
  coordinator.add(list_of({allreduce(0, "ok1"), bad0, allreduce(0, "ok2")}), 0);
  coordinator.add(list_of({allreduce(1, "ok1"), bad1, allreduce(1, "ok2")}), 1);
  ResponseList out = coordinator.take_responses();
  ASSERT_EQ(names_of(out), (std::vector<std::string>{"ok1", "bad", "ok2"}));
  EXPECT_TRUE(out.responses[0].error.empty());
  EXPECT_EQ(out.responses[1].error,
            "Mismatched shape for tensor 'bad': rank 0 submitted [4, 3], rank 1 submitted [9]");
  EXPECT_TRUE(out.responses[2].error.empty());
}

TEST(CoordinatorTest, DuplicateAcrossCyclesFailsTheName) {
  Coordinator coordinator(2);
  coordinator.add(list_of({allreduce(0, "x")}), 0);
  coordinator.add(list_of({}), 1);
  EXPECT_TRUE(coordinator.take_responses().responses.empty());
  coordinator.add(list_of({allreduce(0, "x")}), 0);
  coordinator.add(list_of({allreduce(1, "x"), allreduce(1, "y")}), 1);
  ResponseList out = coordinator.take_responses();
  ASSERT_EQ(names_of(out), (std::vector<std::string>{"x"}));
  EXPECT_EQ(out.responses[0].error,
            "Duplicate request for tensor 'x' from rank 0: submitted again before the previous "
            "request with that name completed");
  // y is unaffected and still waits for rank 0.
  EXPECT_EQ(coordinator.pending_count(), 1u);
  coordinator.add(list_of({allreduce(0, "y")}), 0);
  out = coordinator.take_responses();
  ASSERT_EQ(names_of(out), (std::vector<std::string>{"y"}));
  EXPECT_TRUE(out.responses[0].error.empty());
}

TEST(CoordinatorTest, DuplicateWithinOneListIsAnError) {
  Coordinator coordinator(1);
  coordinator.add(list_of({allreduce(0, "x"), allreduce(0, "x")}), 0);
  ResponseList out = coordinator.take_responses();
  ASSERT_EQ(out.responses.size(), 1u);
  EXPECT_NE(out.responses[0].error.find("Duplicate request for tensor 'x' from rank 0"),
            std::string::npos);
}

TEST(CoordinatorTest, NameCanBeReusedAfterCompletion) {
  Coordinator coordinator(2);
  for (int round = 0; round < 3; ++round) {
    coordinator.add(list_of({allreduce(0, "x")}), 0);
    coordinator.add(list_of({allreduce(1, "x")}), 1);
    ResponseList out = coordinator.take_responses();
    ASSERT_EQ(out.responses.size(), 1u);
    EXPECT_TRUE(out.responses[0].error.empty()) << out.responses[0].error;
  }
}

TEST(CoordinatorTest, ShutdownFailsEveryPendingName) {
  Coordinator coordinator(3);
  coordinator.add(list_of({allreduce(0, "x"), allreduce(0, "y")}), 0);
  coordinator.add(list_of({allreduce(1, "y")}), 1);
  coordinator.add(list_of({}), 2);
  EXPECT_TRUE(coordinator.take_responses().responses.empty());

  coordinator.add(list_of({allreduce(0, "z")}), 0);
  coordinator.add(list_of({}, /*shutdown=*/true), 1);
  coordinator.add(list_of({allreduce(2, "y")}), 2);
  ResponseList out = coordinator.take_responses();
  EXPECT_TRUE(out.shutdown);
  EXPECT_EQ(out.shutdown_ranks, (std::vector<int32_t>{1}));
  // y completed normally before the shutdown sweep; x and z fail in first-seen order.
  ASSERT_EQ(names_of(out), (std::vector<std::string>{"y", "x", "z"}));
  EXPECT_TRUE(out.responses[0].error.empty());
  EXPECT_EQ(out.responses[1].error,
            "rank 1 shut down while tensor 'x' was pending: submitted by rank 0, not by rank 1 "
            "and rank 2");
  EXPECT_EQ(out.responses[2].error,
            "rank 1 shut down while tensor 'z' was pending: submitted by rank 0, not by rank 1 "
            "and rank 2");
  EXPECT_EQ(coordinator.pending_count(), 0u);

  // Shutdown is final: later requests fail at once.
  coordinator.add(list_of({allreduce(2, "late")}), 2);
  out = coordinator.take_responses();
  EXPECT_TRUE(out.shutdown);
  ASSERT_EQ(out.responses.size(), 1u);
  EXPECT_NE(out.responses[0].error.find("tensor 'late'"), std::string::npos);
}

TEST(CoordinatorTest, ShutdownWithNothingPending) {
  Coordinator coordinator(2);
  coordinator.add(list_of({}, true), 0);
  coordinator.add(list_of({}, true), 1);
  ResponseList out = coordinator.take_responses();
  EXPECT_TRUE(out.shutdown);
  EXPECT_TRUE(out.responses.empty());
}

TEST(CoordinatorTest, PendingReportsRanksAndFirstSeen) {
  Coordinator coordinator(3);
  Clock::time_point t0 = Clock::now();
  Clock::time_point t1 = t0 + std::chrono::seconds(5);
  coordinator.add(list_of({allreduce(1, "b")}), 1, t0);
  coordinator.add(list_of({allreduce(2, "a"), allreduce(2, "b")}), 2, t1);
  auto pending = coordinator.pending();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].name, "b");
  EXPECT_EQ(pending[0].submitted, (std::vector<int>{1, 2}));
  EXPECT_EQ(pending[0].missing, (std::vector<int>{0}));
  EXPECT_EQ(pending[0].first_seen, t0);
  EXPECT_EQ(pending[1].name, "a");
  EXPECT_EQ(pending[1].submitted, (std::vector<int>{2}));
  EXPECT_EQ(pending[1].missing, (std::vector<int>{0, 1}));
  EXPECT_EQ(pending[1].first_seen, t1);
}

Request join_request(int rank, std::string name = "join.0") {
  Request r;
  r.rank = rank;
  r.name = std::move(name);
  r.op = OpType::join;
  return r;
}

TEST(CoordinatorJoinTest, AllreduceCompletesWithoutJoinedRanksAndCarriesItsShape) {
  Coordinator coordinator(3);
  coordinator.add(list_of({join_request(1)}), 1);
  coordinator.add(list_of({allreduce(0, "g", {5, 2})}), 0);
  EXPECT_TRUE(coordinator.take_responses().responses.empty())
      << "rank 2 has neither joined nor sent g";
  EXPECT_TRUE(coordinator.any_joined());
  coordinator.add(list_of({allreduce(2, "g", {5, 2})}), 2);
  ResponseList out = coordinator.take_responses();
  ASSERT_EQ(names_of(out), std::vector<std::string>{"g"});
  EXPECT_TRUE(out.responses[0].error.empty()) << out.responses[0].error;
  EXPECT_EQ(out.responses[0].shape, (std::vector<int64_t>{5, 2}));
}

TEST(CoordinatorJoinTest, JoiningCompletesWhatTheOthersAlreadySentThenJoinLast) {
  Coordinator coordinator(3);
  coordinator.add(list_of({allreduce(0, "a"), allreduce(0, "b")}), 0);
  coordinator.add(list_of({allreduce(1, "a")}), 1);
  coordinator.add(list_of({join_request(2)}), 2);  // a: every non-joined rank sent it
  EXPECT_EQ(names_of(coordinator.take_responses()), std::vector<std::string>{"a"});
  coordinator.add(list_of({join_request(0)}), 0);
  coordinator.add(list_of({join_request(1)}), 1);  // b: rank 1 joined without sending it
  ResponseList out = coordinator.take_responses();
  ASSERT_EQ(names_of(out), (std::vector<std::string>{"b", "join.0"}));
  EXPECT_EQ(out.responses[1].op, OpType::join);
  EXPECT_EQ(out.responses[1].args, std::vector<int64_t>{1}) << "rank 1 joined last";
  EXPECT_FALSE(coordinator.any_joined()) << "the joined state resets after the join completed";
  // Next round: nobody is joined, so a name waits for every rank again.
  coordinator.add(list_of({allreduce(0, "c")}), 0);
  EXPECT_TRUE(coordinator.take_responses().responses.empty());
}

TEST(CoordinatorJoinTest, OpsNeedingEveryRankFailWhileARankIsJoined) {
  Coordinator coordinator(2);
  coordinator.add(list_of({join_request(0)}), 0);
  Request gather = allreduce(1, "gathered");
  gather.op = OpType::allgather;
  Request bcast = allreduce(1, "sent");
  bcast.op = OpType::broadcast;
  coordinator.add(list_of({gather, bcast}), 1);
  ResponseList out = coordinator.take_responses();
  ASSERT_EQ(out.responses.size(), 2u);
  EXPECT_EQ(out.responses[0].error,
            "allgather of tensor 'gathered' is not supported while ranks have joined (rank 0 "
            "called join()); as in Horovod, only allreduce and barrier run with joined ranks");
  EXPECT_NE(out.responses[1].error.find("broadcast of tensor 'sent'"), std::string::npos);
}

TEST(CoordinatorJoinTest, OpsNeedingEveryRankFailAtOnceWithoutWaitingForTheOthers) {
  // Rank 1 joined; ranks 0 and 2 each submit an allgather under a different name (their
  // unnamed-op counters differ): neither waits for the other's, both fail at once.
  Coordinator coordinator(3);
  Request gather0 = allreduce(0, "allgather.noname.0");
  gather0.op = OpType::allgather;
  coordinator.add(list_of({gather0}), 0);  // before the join: it waits
  EXPECT_TRUE(coordinator.take_responses().responses.empty());
  coordinator.add(list_of({join_request(1)}), 1);  // the join fails it
  ResponseList out = coordinator.take_responses();
  ASSERT_EQ(out.responses.size(), 1u);
  EXPECT_NE(out.responses[0].error.find("not supported while ranks have joined (rank 1"),
            std::string::npos)
      << out.responses[0].error;
  Request gather2 = allreduce(2, "allgather.noname.1");
  gather2.op = OpType::allgather;
  coordinator.add(list_of({gather2}), 2);  // after the join: fails on arrival
  out = coordinator.take_responses();
  ASSERT_EQ(out.responses.size(), 1u);
  EXPECT_EQ(out.responses[0].names, std::vector<std::string>{"allgather.noname.1"});
  EXPECT_FALSE(out.responses[0].error.empty());
  EXPECT_TRUE(coordinator.any_joined());  // the join itself still waits for ranks 0 and 2
}

TEST(CoordinatorProcessSetTest, RemovalRefusedWhenAMemberIsBusy) {
  auto remove = [](int rank, int32_t busy) {
    Request r;
    r.rank = rank;
    r.name = "kolo.remove_process_set.0";
    r.op = OpType::process_set_remove;
    r.dtype = DataType::int64;
    r.args = {4, busy};
    return r;
  };
  Response refused = run_one(3, [&](int r) { return remove(r, r == 2 ? 1 : 0); });
  EXPECT_EQ(refused.error,
            "process set 4 cannot be removed: rank 2 still has operations pending on it "
            "(synchronize them first)");
  Response done = run_one(3, [&](int r) { return remove(r, 0); });
  EXPECT_TRUE(done.error.empty()) << done.error;
  EXPECT_EQ(done.args, (std::vector<int64_t>{4}));
  Response mismatch = run_one(2, [&](int r) {
    Request add = remove(r, 0);
    add.op = OpType::process_set_add;
    add.args = r == 0 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1};
    return add;
  });
  EXPECT_NE(mismatch.error.find("Mismatched process set ranks"), std::string::npos)
      << mismatch.error;
}

TEST(CoordinatorTest, InvalidRequestFailsTheNameOnEveryRankWithItsMessage) {
  // Rank 1 got its arguments wrong (it already raised on its own thread); the others submitted
  // fine requests for the name, and fail with rank 1's message instead of waiting for it.
  Response response = run_one(3, [](int r) {
    Request request = allreduce(r, "w");
    if (r == 1)
      request.invalid = "rank 1: tensor 'w': in-place operations need a contiguous tensor";
    return request;
  });
  EXPECT_EQ(response.error, "rank 1: tensor 'w': in-place operations need a contiguous tensor");
  EXPECT_EQ(response.names, std::vector<std::string>{"w"});
}

TEST(CoordinatorTest, InvalidRequestsOfSeveralRanksAreAllNamed) {
  Response response = run_one(3, [](int r) {
    Request request = allreduce(r, "w", r == 2 ? std::vector<int64_t>{5} : std::vector<int64_t>{4});
    if (r != 1) request.invalid = "rank " + std::to_string(r) + ": bad";
    return request;
  });
  // The ranks' own complaints come first: a shape that also differs is a consequence.
  EXPECT_EQ(response.error, "rank 0: bad; rank 2: bad");
}

TEST(CoordinatorTest, RejectsMisstampedRequestsAndBadRanks) {
  Coordinator coordinator(2);
  EXPECT_THROW(coordinator.add(list_of({allreduce(0, "x")}), 1), ProtocolError);
  EXPECT_THROW(coordinator.add(list_of({}), 2), ProtocolError);
  EXPECT_THROW(Coordinator(0), InvalidArgument);
}

TEST(CoordinatorTest, CancelFailsAPendingNameOnceWithTheGivenMessage) {
  Coordinator coordinator(3);
  coordinator.add(list_of({allreduce(0, "stuck"), allreduce(0, "fine")}), 0);
  coordinator.add(list_of({allreduce(1, "stuck"), allreduce(1, "fine")}), 1);
  coordinator.cancel("stuck", "stalled: rank 2 missing");
  coordinator.cancel("never-seen", "ignored");
  ResponseList out = coordinator.take_responses();
  ASSERT_EQ(out.responses.size(), 1u);
  EXPECT_EQ(out.responses[0].names, std::vector<std::string>{"stuck"});
  EXPECT_EQ(out.responses[0].error, "stalled: rank 2 missing");
  EXPECT_EQ(coordinator.pending_count(), 1u);
  // Rank 2 submitting it later starts a new round rather than completing the cancelled one.
  coordinator.add(list_of({allreduce(2, "stuck"), allreduce(2, "fine")}), 2);
  out = coordinator.take_responses();
  EXPECT_EQ(names_of(out), std::vector<std::string>{"fine"});
  EXPECT_EQ(coordinator.pending_count(), 1u);
}

}  // namespace
}  // namespace kolo::negotiation
