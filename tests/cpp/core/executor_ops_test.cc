// The executor's reducescatter, alltoall, Adasum and whole-group paths on in-process ranks, fed
// with the responses the coordinator builds (make_response / merge_group) from every rank's
// requests.
#include <gtest/gtest.h>

#include <map>

#include "backends/kolo_backend.h"
#include "base/errors.h"
#include "comm/rank_threads.h"
#include "core/executor.h"
#include "negotiation/group_release.h"
#include "negotiation/request_checks.h"

namespace kolo::core {
namespace {

using comm::testing::RankThreads;
using negotiation::OpType;
using negotiation::Request;
using negotiation::Response;
using negotiation::UserReduceOp;

Request request_of(int rank, const std::string& name, OpType op, std::vector<int64_t> shape,
                   DataType dtype = DataType::float32) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.op = op;
  r.dtype = dtype;
  r.shape = std::move(shape);
  return r;
}

// What the coordinator answers when every rank submitted make(rank).
Response agreed(int size, const std::function<Request(int)>& make) {
  std::vector<Request> by_rank;
  for (int r = 0; r < size; ++r) by_rank.push_back(make(r));
  EXPECT_EQ(negotiation::find_mismatch(by_rank), "");
  return negotiation::make_response(by_rank);
}

// Runs `responses` on every rank; inputs[rank][name] are the rank's float inputs (outputs in place
// unless the op allocates). Returns, per rank, each name's result as floats plus its shape.
struct Result {
  std::vector<float> values;
  std::vector<int64_t> shape;
  std::vector<int64_t> received_splits;
  std::string error;
};

std::vector<std::map<std::string, Result>> execute(
    int size, const std::vector<Response>& responses,
    const std::function<std::map<std::string, std::pair<Request, std::vector<float>>>(int)>&
        inputs) {
  std::vector<std::map<std::string, Result>> results(static_cast<size_t>(size));
  RankThreads group(size);
  EXPECT_TRUE(group.run([&](comm::Communicator& comm) {
    backends::KoloBackend backend(comm, comm::AllreduceOptions{});
    HandleTable handles;
    Executor executor(backend, handles, ExecutorOptions{comm.rank(), size, 1 << 20});
    auto mine = inputs(comm.rank());
    std::map<std::string, TensorEntry> pending;
    std::map<std::string, HandleId> ids;
    for (auto& [name, item] : mine) {
      TensorEntry entry;
      entry.request = item.first;
      entry.input = item.second.data();
      entry.output = item.second.data();
      entry.handle = handles.create();
      ids[name] = entry.handle;
      pending.emplace(name, std::move(entry));
    }
    executor.run(responses, pending);
    for (auto& [name, id] : ids) {
      Result& out = results[static_cast<size_t>(comm.rank())][name];
      try {
        handles.wait(id);
      } catch (const Error& error) {
        out.error = error.what();
        continue;
      }
      OwnedBuffer buffer = handles.release(id);
      if (buffer.data) {
        const auto* data = reinterpret_cast<const float*>(buffer.data.get());
        out.values.assign(data, data + buffer.bytes / sizeof(float));
        out.shape = buffer.shape;
        out.received_splits = buffer.received_splits;
      } else {
        out.values = mine[name].second;
        out.shape = mine[name].first.shape;
      }
    }
  }));
  return results;
}

TEST(ExecutorOpsTest, ReducescatterSplitsRowsAsHorovod) {
  const int n = 3;
  auto make = [](int r) {
    Request q = request_of(r, "rs", OpType::reducescatter, {7, 2});
    q.reduce_op = UserReduceOp::average;
    return q;
  };
  auto results = execute(n, {agreed(n, make)}, [&](int r) {
    std::vector<float> x(14);
    for (int i = 0; i < 14; ++i) x[i] = static_cast<float>(i * (r + 1));
    return std::map<std::string, std::pair<Request, std::vector<float>>>{{"rs", {make(r), x}}};
  });
  const int64_t first_row[] = {0, 3, 5};
  const int64_t rows[] = {3, 2, 2};
  for (int r = 0; r < n; ++r) {
    const Result& out = results[r]["rs"];
    ASSERT_EQ(out.error, "");
    EXPECT_EQ(out.shape, (std::vector<int64_t>{rows[r], 2}));
    ASSERT_EQ(out.values.size(), static_cast<size_t>(rows[r] * 2));
    for (size_t i = 0; i < out.values.size(); ++i) {
      // mean over ranks of i * (r + 1) = i * 2 for 3 ranks
      EXPECT_FLOAT_EQ(out.values[i], static_cast<float>((first_row[r] * 2 + i) * 2));
    }
  }
}

// Average and postscale are applied inside the allreduce, where each total is computed
// (kernels/result_scale.h): fused tensors, a lone one with its own postscale, and a boolean
// average that fails that tensor alone on every rank, before any byte moved (no rank waits).
TEST(ExecutorOpsTest, AverageAndPostscaleOfFusedAndLoneTensors) {
  const int n = 3;
  const std::map<std::string, std::pair<size_t, double>> tensors = {// elements, postscale
                                                                    {"a", {1000, 1.0}},
                                                                    {"b", {7, 1.0}},
                                                                    {"c", {5000, 0.5}}};
  auto make = [&](int r, const std::string& name) {
    Request q = request_of(r, name, OpType::allreduce,
                           {static_cast<int64_t>(name == "flags" ? 64 : tensors.at(name).first)},
                           name == "flags" ? DataType::boolean : DataType::float32);
    q.reduce_op = UserReduceOp::average;
    if (name != "flags") q.postscale = tensors.at(name).second;
    return q;
  };
  std::vector<Response> responses;
  for (const std::string name : {"a", "flags", "b", "c"}) {
    responses.push_back(agreed(n, [&](int r) { return make(r, name); }));
  }
  // Whole numbers: every order of summation gives the same exact sum, so the expected value is
  // that sum, times the postscale, divided by 3 in float32.
  auto value = [](int r, size_t i) { return static_cast<float>((r + 1) * static_cast<int>(i)); };
  auto results = execute(n, responses, [&](int r) {
    std::map<std::string, std::pair<Request, std::vector<float>>> mine;
    for (const auto& [name, spec] : tensors) {
      std::vector<float> x(spec.first);
      for (size_t i = 0; i < x.size(); ++i) x[i] = value(r, i);
      mine[name] = {make(r, name), x};
    }
    mine["flags"] = {make(r, "flags"), std::vector<float>(16, 0.0f)};
    return mine;
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_NE(results[r]["flags"].error.find("cannot average bool"), std::string::npos)
        << "rank " << r << ": " << results[r]["flags"].error;
    for (const auto& [name, spec] : tensors) {
      const Result& out = results[r][name];
      ASSERT_EQ(out.error, "") << name;
      ASSERT_EQ(out.values.size(), spec.first);
      for (size_t i = 0; i < spec.first; ++i) {
        const float sum = value(0, i) + value(1, i) + value(2, i);
        const float expected = sum * static_cast<float>(spec.second) / 3.0f;
        ASSERT_EQ(out.values[i], expected) << "rank " << r << " " << name << "[" << i << "]";
      }
    }
  }
}

TEST(ExecutorOpsTest, AlltoallDeliversRowsAndReceivedSplits) {
  const int n = 3;
  // Rank r sends (r + d) % 2 rows to rank d; row value = 100 r + 10 d + k.
  auto make = [&](int r) {
    Request q = request_of(r, "a2a", OpType::alltoall, {0, 1});
    for (int d = 0; d < n; ++d) q.splits.push_back((r + d) % 2);
    for (int64_t s : q.splits) q.shape[0] += s;
    return q;
  };
  auto results = execute(n, {agreed(n, make)}, [&](int r) {
    std::vector<float> x;
    for (int d = 0; d < n; ++d) {
      for (int k = 0; k < (r + d) % 2; ++k) x.push_back(static_cast<float>(100 * r + 10 * d + k));
    }
    return std::map<std::string, std::pair<Request, std::vector<float>>>{{"a2a", {make(r), x}}};
  });
  for (int d = 0; d < n; ++d) {
    const Result& out = results[d]["a2a"];
    ASSERT_EQ(out.error, "");
    std::vector<float> want;
    std::vector<int64_t> splits;
    for (int r = 0; r < n; ++r) {
      splits.push_back((r + d) % 2);
      for (int k = 0; k < (r + d) % 2; ++k)
        want.push_back(static_cast<float>(100 * r + 10 * d + k));
    }
    EXPECT_EQ(out.values, want) << "rank " << d;
    EXPECT_EQ(out.received_splits, splits);
    EXPECT_EQ(out.shape, (std::vector<int64_t>{static_cast<int64_t>(want.size()), 1}));
  }
}

TEST(ExecutorOpsTest, GroupFusesAndAdasumRunsPerTensor) {
  const int n = 2;
  auto sum_member = [](int r, const std::string& name, int64_t len) {
    Request q = request_of(r, name, OpType::allreduce, {len});
    q.group_id = 5;
    q.group_size = 2;
    return q;
  };
  std::vector<Response> members = {agreed(n, [&](int r) { return sum_member(r, "g.0", 3); }),
                                   agreed(n, [&](int r) { return sum_member(r, "g.1", 5); })};
  std::vector<Response> responses = negotiation::merge_group(5, members);
  ASSERT_EQ(responses.size(), 1u);
  auto adasum = [](int r) {
    Request q = request_of(r, "ada", OpType::allreduce, {2});
    q.reduce_op = UserReduceOp::adasum;
    return q;
  };
  auto adasum_int = [](int r) {
    Request q = request_of(r, "ada.int", OpType::allreduce, {1}, DataType::int32);
    q.reduce_op = UserReduceOp::adasum;
    return q;
  };
  responses.push_back(agreed(n, adasum));
  responses.push_back(agreed(n, adasum_int));
  auto results = execute(n, responses, [&](int r) {
    // Orthogonal Adasum inputs (1, 0) and (0, 2): summed to (1, 2).
    std::vector<float> ada = r == 0 ? std::vector<float>{1, 0} : std::vector<float>{0, 2};
    return std::map<std::string, std::pair<Request, std::vector<float>>>{
        {"g.0", {sum_member(r, "g.0", 3), std::vector<float>(3, 1.0f + r)}},
        {"g.1", {sum_member(r, "g.1", 5), std::vector<float>(5, 2.0f * (r + 1))}},
        {"ada", {adasum(r), ada}},
        {"ada.int", {adasum_int(r), std::vector<float>(1, 0)}}};
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(results[r]["g.0"].values, std::vector<float>(3, 3.0f));
    EXPECT_EQ(results[r]["g.1"].values, std::vector<float>(5, 6.0f));
    EXPECT_EQ(results[r]["ada"].values, (std::vector<float>{1, 2}));
    EXPECT_NE(results[r]["ada.int"].error.find("int32"), std::string::npos)
        << results[r]["ada.int"].error;
  }
}

}  // namespace
}  // namespace kolo::core
