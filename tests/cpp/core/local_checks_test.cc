#include "core/local_checks.h"

#include <gtest/gtest.h>

namespace kolo::core {
namespace {

using negotiation::OpType;
using negotiation::Request;
using negotiation::UserReduceOp;

Request request_of(OpType op, std::vector<int64_t> shape) {
  Request r;
  r.name = "t";
  r.op = op;
  r.shape = std::move(shape);
  return r;
}

TEST(LocalChecksTest, FineRequestsPass) {
  Request alltoall = request_of(OpType::alltoall, {6, 2});
  alltoall.splits = {1, 2, 3};
  EXPECT_EQ(find_local_problem(alltoall, {0, 1, 2}, 0).message, "");
  Request even = request_of(OpType::alltoall, {6});
  EXPECT_EQ(find_local_problem(even, {0, 1, 2}, 0).message, "");
  Request scatter = request_of(OpType::reducescatter, {6});
  scatter.reduce_op = UserReduceOp::average;
  EXPECT_EQ(find_local_problem(scatter, {0, 1}, 1).message, "");
}

TEST(LocalChecksTest, AlltoallSplitsThatDoNotFitAreABadArgument) {
  Request wrong_length = request_of(OpType::alltoall, {4});
  wrong_length.rank = 1;
  wrong_length.splits = {2, 2};
  LocalProblem problem = find_local_problem(wrong_length, {0, 1, 2}, 1);
  EXPECT_TRUE(problem.bad_argument);
  EXPECT_NE(problem.message.find("tensor 't' on rank 1"), std::string::npos) << problem.message;
  EXPECT_NE(problem.message.find("expected one per rank (3)"), std::string::npos)
      << problem.message;

  Request uneven = request_of(OpType::alltoall, {4});
  problem = find_local_problem(uneven, {0, 1, 2}, 0);
  EXPECT_TRUE(problem.bad_argument);
  EXPECT_NE(problem.message.find("divide evenly"), std::string::npos) << problem.message;
}

TEST(LocalChecksTest, ReducescatterRefusesOpsOtherThanAverageAndSumAsHorovodDoes) {
  for (auto op :
       {UserReduceOp::adasum, UserReduceOp::min, UserReduceOp::max, UserReduceOp::product}) {
    Request scatter = request_of(OpType::reducescatter, {4});
    scatter.reduce_op = op;
    LocalProblem problem = find_local_problem(scatter, {0, 1}, 1);
    EXPECT_FALSE(problem.bad_argument);  // Horovod aborts: a HorovodInternalError
    EXPECT_NE(problem.message.find("rank 1: cannot reducescatter tensor 't'"), std::string::npos)
        << problem.message;
  }
}

TEST(LocalChecksTest, BroadcastRootIsMappedIntoTheSetOrRefused) {
  Request bcast = request_of(OpType::broadcast, {3});
  bcast.process_set = 2;
  bcast.root = 5;
  EXPECT_EQ(find_local_problem(bcast, {1, 5, 7}, 7).message, "");
  EXPECT_EQ(bcast.root, 1);

  Request outside = request_of(OpType::broadcast, {3});
  outside.process_set = 2;
  outside.root = 4;
  LocalProblem problem = find_local_problem(outside, {1, 5, 7}, 7);
  EXPECT_TRUE(problem.bad_argument);
  EXPECT_NE(problem.message.find("root rank 4, which is not a member of process set 2"),
            std::string::npos)
      << problem.message;
}

TEST(LocalChecksTest, TheCallersOwnComplaintWins) {
  Request r = request_of(OpType::alltoall, {4});
  r.invalid = "rank 0: alltoall of tensor 't': splits must be a 1-D sequence of integers";
  LocalProblem problem = find_local_problem(r, {0, 1, 2}, 0);
  EXPECT_TRUE(problem.bad_argument);
  EXPECT_EQ(problem.message, r.invalid);
}

}  // namespace
}  // namespace kolo::core
