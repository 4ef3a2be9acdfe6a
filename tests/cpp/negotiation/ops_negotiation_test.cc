// Negotiation of alltoall (splits carried to every rank, bad splits named by rank and tensor),
// reducescatter (identical shapes) and groups (released whole, fused per kind, failing whole),
// plus the wire round trip of the appended fields.
#include <gtest/gtest.h>

#include "negotiation/coordinator.h"
#include "negotiation/request_checks.h"
#include "negotiation/wire.h"

namespace kolo::negotiation {
namespace {

Request request(int rank, std::string name, OpType op, std::vector<int64_t> shape) {
  Request r;
  r.rank = rank;
  r.name = std::move(name);
  r.op = op;
  r.dtype = DataType::float32;
  r.shape = std::move(shape);
  return r;
}

Request member(int rank, std::string name, int32_t group, int32_t size,
               std::vector<int64_t> shape = {4}) {
  Request r = request(rank, std::move(name), OpType::allreduce, std::move(shape));
  r.group_id = group;
  r.group_size = size;
  return r;
}

std::vector<Response> run(int size, const std::function<std::vector<Request>(int)>& make) {
  Coordinator coordinator(size);
  for (int r = 0; r < size; ++r) coordinator.add(RequestList{make(r), false}, r);
  return coordinator.take_responses().responses;
}

TEST(AlltoallNegotiation, CarriesEveryRanksSplits) {
  auto responses = run(3, [](int r) {
    Request q = request(r, "a2a", OpType::alltoall, {3 + r, 2});
    q.splits = {1, 1, 1 + r};
    return std::vector<Request>{q};
  });
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].error, "");
  EXPECT_EQ(responses[0].splits, (std::vector<int64_t>{1, 1, 1, 1, 1, 2, 1, 1, 3}));
}

TEST(AlltoallNegotiation, EvenSplitWithoutSplits) {
  auto responses = run(2, [](int r) {
    return std::vector<Request>{request(r, "a2a", OpType::alltoall, {4 + 2 * r})};
  });
  EXPECT_EQ(responses.at(0).splits, (std::vector<int64_t>{2, 2, 3, 3}));
}

TEST(AlltoallNegotiation, BadSplitsNameRankAndTensor) {
  auto wrong_length = run(3, [](int r) {
    Request q = request(r, "t", OpType::alltoall, {3});
    q.splits = r == 2 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1, 1, 1};
    return std::vector<Request>{q};
  });
  EXPECT_EQ(wrong_length.at(0).error,
            "Invalid splits for alltoall of tensor 't' on rank 2: [1, 2] has 2 entries, expected "
            "one per rank (3)");
  auto wrong_sum = run(2, [](int r) {
    Request q = request(r, "t", OpType::alltoall, {3});
    q.splits = r == 1 ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{1, 2};
    return std::vector<Request>{q};
  });
  EXPECT_EQ(wrong_sum.at(0).error,
            "Invalid splits for alltoall of tensor 't' on rank 1: [1, 1] sums to 2, but the "
            "tensor's first dimension is 3");
  auto indivisible = run(2, [](int r) {
    return std::vector<Request>{request(r, "t", OpType::alltoall, {3})};
  });
  EXPECT_NE(indivisible.at(0).error.find("rank 0"), std::string::npos);
  EXPECT_NE(indivisible.at(0).error.find("divide evenly"), std::string::npos);
  auto trailing = run(2, [](int r) {
    return std::vector<Request>{request(r, "t", OpType::alltoall, {2, 1 + r})};
  });
  EXPECT_NE(trailing.at(0).error.find("all dimensions but the first"), std::string::npos);
}

TEST(ReducescatterNegotiation, ShapesMustBeIdentical) {
  auto ok = run(2, [](int r) {
    return std::vector<Request>{request(r, "rs", OpType::reducescatter, {5, 2})};
  });
  EXPECT_EQ(ok.at(0).error, "");
  auto bad = run(2, [](int r) {
    return std::vector<Request>{request(r, "rs", OpType::reducescatter, {5 + r, 2})};
  });
  EXPECT_EQ(bad.at(0).error,
            "Mismatched shape for tensor 'rs': rank 0 submitted [5, 2], rank 1 submitted [6, 2]");
  auto scalar = run(2, [](int r) {
    return std::vector<Request>{request(r, "rs", OpType::reducescatter, {})};
  });
  EXPECT_NE(scalar.at(0).error.find("scalar"), std::string::npos);
  EXPECT_EQ(reducescatter_rows(7, 3, 0), 3);
  EXPECT_EQ(reducescatter_rows(7, 3, 1), 2);
  EXPECT_EQ(reducescatter_rows(7, 3, 2), 2);
  EXPECT_EQ(reducescatter_rows(1, 3, 2), 0);
}

TEST(GroupNegotiation, NoMemberBeforeTheWholeGroupIsReadyEverywhere) {
  Coordinator coordinator(2);
  // Cycle 1: both ranks have g.0; only rank 0 has g.1.
  coordinator.add(RequestList{{member(0, "g.0", 7, 3), member(0, "g.1", 7, 3)}, false}, 0);
  coordinator.add(RequestList{{member(1, "g.0", 7, 3)}, false}, 1);
  EXPECT_TRUE(coordinator.take_responses().responses.empty());
  // Cycle 2: g.1 completes, g.2 only on rank 1; an ungrouped tensor passes meanwhile.
  coordinator.add(RequestList{{request(0, "solo", OpType::allreduce, {1})}, false}, 0);
  coordinator.add(RequestList{{member(1, "g.1", 7, 3), member(1, "g.2", 7, 3),
                               request(1, "solo", OpType::allreduce, {1})},
                              false},
                  1);
  auto second = coordinator.take_responses().responses;
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].names, std::vector<std::string>{"solo"});
  // Cycle 3: the last member arrives: the group leaves as one response, fused.
  coordinator.add(RequestList{{member(0, "g.2", 7, 3)}, false}, 0);
  coordinator.add(RequestList{{}, false}, 1);
  auto third = coordinator.take_responses().responses;
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].names, (std::vector<std::string>{"g.0", "g.1", "g.2"}));
  EXPECT_EQ(third[0].group_id, 7);
  EXPECT_EQ(third[0].error, "");
}

TEST(GroupNegotiation, DifferentDtypesLeaveTogetherAsSeparateUnits) {
  auto responses = run(2, [](int r) {
    Request half = member(r, "g.1", 3, 3);
    half.dtype = DataType::float16;
    return std::vector<Request>{member(r, "g.0", 3, 3), half, member(r, "g.2", 3, 3)};
  });
  ASSERT_EQ(responses.size(), 2u);
  EXPECT_EQ(responses[0].names, (std::vector<std::string>{"g.0", "g.2"}));
  EXPECT_EQ(responses[1].names, (std::vector<std::string>{"g.1"}));
}

TEST(GroupNegotiation, OneBadMemberFailsTheWholeGroup) {
  auto responses = run(2, [](int r) {
    return std::vector<Request>{member(r, "g.0", 1, 2), member(r, "g.1", 1, 2, {4 + r})};
  });
  ASSERT_EQ(responses.size(), 2u);
  EXPECT_EQ(responses[0].names, std::vector<std::string>{"g.0"});
  EXPECT_EQ(responses[0].error,
            "Tensor 'g.0' was not run: tensor 'g.1' of the same group (1) failed: Mismatched "
            "shape for tensor 'g.1': rank 0 submitted [4], rank 1 submitted [5]");
  EXPECT_EQ(responses[1].error,
            "Mismatched shape for tensor 'g.1': rank 0 submitted [4], rank 1 submitted [5]");
}

TEST(GroupNegotiation, MemberOfDifferentGroupsIsAMismatch) {
  auto responses = run(2, [](int r) { return std::vector<Request>{member(r, "x", 1 + r, 1)}; });
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].error,
            "Mismatched group for tensor 'x': rank 0 submitted group 1 of 1, rank 1 submitted "
            "group 2 of 1");
}

TEST(GroupNegotiation, ShutdownFailsHeldMembers) {
  Coordinator coordinator(2);
  coordinator.add(RequestList{{member(0, "g.0", 4, 2)}, false}, 0);
  coordinator.add(RequestList{{member(1, "g.0", 4, 2)}, true}, 1);
  auto out = coordinator.take_responses();
  EXPECT_TRUE(out.shutdown);
  ASSERT_EQ(out.responses.size(), 1u);
  EXPECT_NE(out.responses[0].error.find("waited for the rest of its group (1 of 2"),
            std::string::npos);
}

TEST(OpsWire, AppendedFieldsRoundTrip) {
  RequestList requests;
  Request q = member(1, "g.0", 12, 5);
  q.op = OpType::alltoall;
  q.splits = {0, 3, int64_t{1} << 40};
  requests.requests = {q};
  EXPECT_EQ(decode_request_list(encode(requests), 1), requests);
  ResponseList responses;
  Response p;
  p.names = {"a", "b"};
  p.splits = {1, 2, 3, 4};
  p.group_id = 12;
  responses.responses = {p};
  EXPECT_EQ(decode_response_list(encode(responses), 0), responses);
}

}  // namespace
}  // namespace kolo::negotiation
