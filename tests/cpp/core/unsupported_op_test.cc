// A backend that lacks an operation fails only the tensors of that operation, on every rank, with
// a message naming the backend and the operation; the ops after it in the same cycle and in later
// cycles still run (the session is not ended).
#include <gtest/gtest.h>

#include <map>

#include "backends/kolo_backend.h"
#include "base/errors.h"
#include "comm/rank_threads.h"
#include "core/executor.h"
#include "negotiation/request_checks.h"

namespace kolo::core {
namespace {

using negotiation::OpType;
using negotiation::Request;
using negotiation::Response;

// Allreduce and broadcast through kolo's own algorithms; allgather, alltoall and the rest are the
// base class's "does not support".
class AllreduceOnlyBackend final : public backends::Backend {
 public:
  explicit AllreduceOnlyBackend(comm::Communicator& comm)
      : inner_(comm, comm::AllreduceOptions{}) {}
  [[nodiscard]] std::string name() const override { return "allreduce-only"; }
  void allreduce(Bytes data, size_t count, DataType type, ReduceOp op) override {
    inner_.allreduce(data, count, type, op);
  }

 private:
  backends::KoloBackend inner_;
};

Request request_of(int rank, const std::string& name, OpType op, std::vector<int64_t> shape) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.op = op;
  r.dtype = DataType::float32;
  r.shape = std::move(shape);
  return r;
}

Response agreed(int size, OpType op, const std::string& name, std::vector<int64_t> shape) {
  std::vector<Request> by_rank;
  for (int r = 0; r < size; ++r) by_rank.push_back(request_of(r, name, op, shape));
  EXPECT_EQ(negotiation::find_mismatch(by_rank), "");
  return negotiation::make_response(by_rank);
}

struct Outcome {
  std::string error;          // empty: completed
  std::vector<float> values;  // in-place result when completed
};

// Runs each cycle's responses in turn on every rank (same executor, as the session would) and
// returns, per rank, each tensor's outcome. Every tensor is six floats of value rank + 1.
std::vector<std::map<std::string, Outcome>> run_cycles(
    int size, const std::vector<std::vector<std::pair<Response, std::vector<int64_t>>>>& cycles) {
  std::vector<std::map<std::string, Outcome>> outcomes(static_cast<size_t>(size));
  comm::testing::RankThreads group(size);
  EXPECT_TRUE(group.run([&](comm::Communicator& comm) {
    AllreduceOnlyBackend backend(comm);
    HandleTable handles;
    Executor executor(backend, handles, ExecutorOptions{comm.rank(), size, 1 << 20});
    std::map<std::string, std::vector<float>> data;
    std::map<std::string, HandleId> ids;
    for (const auto& cycle : cycles) {
      std::map<std::string, TensorEntry> pending;
      std::vector<Response> responses;
      for (const auto& [response, shape] : cycle) {
        const std::string& name = response.names.front();
        auto& values = data[name];
        values.assign(6, static_cast<float>(comm.rank() + 1));
        TensorEntry entry;
        entry.request = request_of(comm.rank(), name, response.op, shape);
        entry.input = values.data();
        entry.output = values.data();
        entry.handle = handles.create();
        ids[name] = entry.handle;
        pending.emplace(name, std::move(entry));
        responses.push_back(response);
      }
      executor.run(responses, pending);
      EXPECT_TRUE(pending.empty()) << "every handle of the cycle is finished or failed";
    }
    auto& mine = outcomes[static_cast<size_t>(comm.rank())];
    for (const auto& [name, id] : ids) {
      try {
        handles.wait(id);
        mine[name].values = data[name];
      } catch (const Error& error) {
        mine[name].error = error.what();
      }
    }
  }));
  return outcomes;
}

class UnsupportedOpTest : public ::testing::TestWithParam<int> {};

TEST_P(UnsupportedOpTest, FailsOnlyThatTensorOnEveryRankAndTheRuntimeGoesOn) {
  const int n = GetParam();
  const std::vector<int64_t> shape = {6};
  auto outcomes = run_cycles(n, {
                                    {{agreed(n, OpType::allgather, "gathered", shape), shape},
                                     {agreed(n, OpType::allreduce, "summed", shape), shape}},
                                    {{agreed(n, OpType::alltoall, "exchanged", shape), shape}},
                                    {{agreed(n, OpType::allreduce, "later", shape), shape}},
                                });
  const float sum = static_cast<float>(n * (n + 1) / 2);
  for (int r = 0; r < n; ++r) {
    auto& mine = outcomes[static_cast<size_t>(r)];
    for (const char* name : {"gathered", "exchanged"}) {
      const std::string& error = mine[name].error;
      EXPECT_NE(error.find("backend 'allreduce-only'"), std::string::npos) << error;
      EXPECT_NE(error.find(std::string(name) == "gathered" ? "allgather" : "alltoall"),
                std::string::npos)
          << error;
    }
    for (const char* name : {"summed", "later"}) {
      EXPECT_EQ(mine[name].error, "") << "rank " << r << " " << name;
      EXPECT_EQ(mine[name].values, std::vector<float>(6, sum)) << "rank " << r << " " << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, UnsupportedOpTest, ::testing::Values(2, 3));

TEST(UnsupportedOperationTest, BaseBackendNamesItselfAndTheOperation) {
  class Nothing final : public backends::Backend {
   public:
    [[nodiscard]] std::string name() const override { return "nothing"; }
  } backend;
  try {
    backend.barrier();
    FAIL() << "barrier should be unsupported";
  } catch (const UnsupportedOperation& error) {
    EXPECT_EQ(std::string(error.what()), "backend 'nothing' does not support barrier");
  }
  EXPECT_THROW(backend.adasum({}, 0, DataType::float32), UnsupportedOperation);
}

}  // namespace
}  // namespace kolo::core
