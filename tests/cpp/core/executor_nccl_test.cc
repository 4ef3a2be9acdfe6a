// The executor's NCCL path against the stand-in GPU (tests/cpp/gpu/fakes/fake_gpu_device.cc:
// device memory is host memory, every CUDA and NCCL call is logged), at one rank: a response on
// CUDA tensors is queued on kolo's stream after the callers' events, its handles complete with a
// completion event, the communicator comes from the unique id sent by the backend's broadcast,
// and an elastic reset drops it.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "base/errors.h"
#include "core/executor.h"
#include "gpu/nccl_collectives.h"
#include "negotiation/request_checks.h"

namespace kolo::core {
namespace {

using negotiation::OpType;
using negotiation::Request;
using negotiation::UserReduceOp;

const gpu::CudaRuntime& fake_cuda() {
  static const gpu::CudaRuntime cuda = gpu::load_cuda_runtime(
      {{gpu::LibraryCandidate::How::explicit_path, FAKE_GPU_DEVICE, "test"}});
  return cuda;
}
const gpu::NcclLibrary& fake_nccl() {
  static const gpu::NcclLibrary nccl =
      gpu::load_nccl({{gpu::LibraryCandidate::How::explicit_path, FAKE_GPU_DEVICE, "test"}});
  return nccl;
}
std::string take_log() {
  void* handle = ::dlopen(FAKE_GPU_DEVICE, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr);
  std::string log = reinterpret_cast<const char* (*)()>(::dlsym(handle, "fake_gpu_log"))();
  reinterpret_cast<void (*)()>(::dlsym(handle, "fake_gpu_clear_log"))();
  return log;
}
int count(const std::string& log, const std::string& text) {
  int found = 0;
  for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++found;
  return found;
}

// One rank: the unique id's broadcast has nobody to send to; it records that it was asked. As
// rank 1 of 3 (the plans of the allocating ops): the allocation agreement's allgather answers
// that every rank allocated, or that `failed_rank` did not.
class OneRankBackend : public backends::Backend {
 public:
  [[nodiscard]] std::string name() const override { return "one rank"; }
  void broadcast(Bytes data, int root) override { broadcasts.push_back({data.size(), root}); }
  void allgatherv(ConstBytes, Bytes out, std::span<const size_t>) override {
    std::fill(out.begin(), out.end(), std::byte{0});
    if (failed_rank >= 0) out[static_cast<size_t>(failed_rank)] = std::byte{1};
  }
  std::vector<std::pair<size_t, int>> broadcasts;
  int failed_rank = -1;
};

Request cuda_request(const std::string& name, OpType op, UserReduceOp reduce, int elements) {
  Request r;
  r.rank = 0;
  r.name = name;
  r.op = op;
  r.reduce_op = reduce;
  r.dtype = DataType::float32;
  r.shape = {elements};
  r.device = negotiation::DeviceKind::cuda;
  r.device_index = 0;
  return r;
}

struct Fixture {
  explicit Fixture(ExecutorOptions options = {0, 1, 1 << 20})
      : executor(backend, handles, options) {
    executor.set_device_libraries({&fake_cuda(), &fake_nccl()});
    fake_cuda().functions.event_create_with_flags(&caller_event, gpu::kCudaEventDisableTiming);
    take_log();
  }
  ~Fixture() { fake_cuda().functions.event_destroy(caller_event); }
  HandleId submit(const Request& request, std::vector<float>& data) {
    TensorEntry entry;
    entry.request = request;
    entry.input = data.data();
    entry.output = data.data();
    entry.handle = handles.create();
    entry.caller_event = reinterpret_cast<std::uintptr_t>(caller_event);
    const HandleId id = entry.handle;
    pending.emplace(request.name, std::move(entry));
    return id;
  }
  OneRankBackend backend;
  HandleTable handles;
  Executor executor;
  std::map<std::string, TensorEntry> pending;
  gpu::cudaEvent_t caller_event = nullptr;
};

TEST(ExecutorNccl, FusedCudaAllreduceIsQueuedAfterTheCallersEventsAndCompletesWithAnEvent) {
  ASSERT_TRUE(fake_nccl().status.loaded) << fake_nccl().status.reason;
  Fixture f;
  std::vector<float> a{2, 4}, b{6};
  const Request ra = cuda_request("a", OpType::allreduce, UserReduceOp::average, 2);
  const Request rb = cuda_request("b", OpType::allreduce, UserReduceOp::average, 1);
  const HandleId ha = f.submit(ra, a);
  const HandleId hb = f.submit(rb, b);
  f.executor.run({negotiation::make_response({ra}), negotiation::make_response({rb})}, f.pending);
  EXPECT_TRUE(f.pending.empty());
  OwnedBuffer done_a = f.handles.release(ha);
  OwnedBuffer done_b = f.handles.release(hb);
  EXPECT_NE(done_a.device_done, 0U);
  EXPECT_EQ(done_a.device_done, done_b.device_done);  // one event for the fused group
  EXPECT_EQ(a, (std::vector<float>{2, 4}));           // the average of one rank
  EXPECT_EQ(b, (std::vector<float>{6}));
  EXPECT_EQ(f.executor.stats().fused_groups, 1U);
  // The unique id went through the backend's broadcast from rank 0, once.
  ASSERT_EQ(f.backend.broadcasts.size(), 1U);
  EXPECT_EQ(f.backend.broadcasts[0], (std::pair<size_t, int>{128, 0}));
  const std::string log = take_log();
  EXPECT_EQ(count(log, "ncclCommInitRankConfig nranks=1 rank=0"), 1) << log;
  EXPECT_EQ(count(log, "cudaStreamWaitEvent"), 2) << log;  // each tensor's caller event
  // Alone, the Average is ncclSum (NCCL's one-rank ncclAvg lost elements on an H200).
  EXPECT_EQ(count(log, "ncclAllReduce n=32 type=7 op=0 in-place"), 1) << log;
  EXPECT_LT(log.find("cudaStreamWaitEvent"), log.find("ncclAllReduce")) << log;
  EXPECT_LT(log.find("ncclAllReduce"), log.find("cudaEventRecord")) << log;
  done_a = {};
  EXPECT_EQ(count(take_log(), "cudaEventDestroy"), 0);  // b's handle still holds it
  done_b = {};
  EXPECT_EQ(count(take_log(), "cudaEventDestroy"), 1);
}

TEST(ExecutorNccl, TheCommunicatorIsKeptThenDroppedAtAReset) {
  Fixture f;
  std::vector<float> x{1, 2, 3};
  const Request rx = cuda_request("x", OpType::broadcast, UserReduceOp::sum, 3);
  for (int round = 0; round < 2; ++round) {
    f.submit(rx, x);
    f.executor.run({negotiation::make_response({rx})}, f.pending);
  }
  std::string log = take_log();
  EXPECT_EQ(count(log, "ncclCommInitRankConfig"), 1) << log;
  EXPECT_EQ(count(log, "ncclBroadcast n=12 type=1 root=0"), 2) << log;
  f.executor.drop_device_state();
  log = take_log();
  EXPECT_EQ(count(log, "ncclCommAbort"), 1) << log;
  EXPECT_EQ(count(log, "cudaStreamDestroy"), 1) << log;
  EXPECT_LT(log.find("ncclCommAbort"), log.find("cudaStreamDestroy")) << log;  // abort first
  f.submit(rx, x);
  f.executor.run({negotiation::make_response({rx})}, f.pending);
  EXPECT_EQ(count(take_log(), "ncclCommInitRankConfig"), 1);  // a new one
  EXPECT_EQ(f.backend.broadcasts.size(), 2U);
}

TEST(ExecutorNccl, AnOpOffTheNcclPathFailsOnlyItsTensorNamingIt) {
  Fixture f;
  std::vector<float> x{1, 2};
  const Request rx = cuda_request("gathered", OpType::allreduce, UserReduceOp::adasum, 2);
  const HandleId id = f.submit(rx, x);
  negotiation::Response response = negotiation::make_response({rx});
  f.executor.run({response}, f.pending);
  try {
    f.handles.wait(id);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("allreduce of CUDA tensor 'gathered'"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(count(take_log(), "nccl"), 0);  // nothing was queued, no communicator made
}

// A joined rank's stand-in (ProcessSet::add_joined_stand_ins: host zeros, no handle) in a CUDA
// allreduce its peers run: with no earlier CUDA op, the device hvd.join(device) named
// (request.device_index) gets the communicator and the zeros; without one, or with one other
// than the GPU of its earlier CUDA ops, the executor ends with an Error naming the rank.
TensorEntry joined_stand_in(const std::string& name, int join_device, std::vector<float>& zeros) {
  TensorEntry entry;
  entry.request.name = name;
  entry.request.op = OpType::allreduce;
  entry.request.dtype = DataType::float32;
  entry.request.shape = {static_cast<int64_t>(zeros.size())};
  entry.request.device_index = join_device;  // request.device stays cpu, as a stand-in's does
  entry.handle = kNoHandle;
  entry.input = zeros.data();
  entry.output = zeros.data();
  return entry;
}
std::string run_error(Fixture& f, const Request& peers) {
  try {
    f.executor.run({negotiation::make_response({peers})}, f.pending);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(ExecutorNccl, AJoinedRanksZerosGoToTheDeviceJoinNamedOrItsEarlierGpu) {
  ASSERT_TRUE(fake_nccl().status.loaded) << fake_nccl().status.reason;
  const Request peers = cuda_request("grad", OpType::allreduce, UserReduceOp::sum, 8);
  std::vector<float> zeros(8, 0.0F);
  {
    Fixture f({1, 3, 1 << 20});  // rank 1 of 3 joined before any CUDA op: hvd.join()
    f.pending.emplace("grad", joined_stand_in("grad", -1, zeros));
    const std::string error = run_error(f, peers);
    EXPECT_NE(error.find("rank 1: joined, it has no GPU"), std::string::npos) << error;
    EXPECT_EQ(count(take_log(), "ncclCommInitRankConfig"), 0);
  }
  {
    Fixture f;  // hvd.join(0) before any CUDA op
    f.pending.emplace("grad", joined_stand_in("grad", 0, zeros));
    f.executor.run({negotiation::make_response({peers})}, f.pending);
    EXPECT_TRUE(f.pending.empty());
    const std::string log = take_log();
    EXPECT_EQ(count(log, "ncclCommInitRankConfig nranks=1 rank=0"), 1) << log;
    EXPECT_EQ(count(log, "cudaMalloc 32"), 1) << log;  // the zeros in device memory
    EXPECT_LT(log.find("cudaMalloc 32"), log.find("ncclAllReduce n=32")) << log;
    // A later join naming the GPU its first one made the communicator on reuses it.
    f.pending.emplace("grad", joined_stand_in("grad", 0, zeros));
    f.executor.run({negotiation::make_response({peers})}, f.pending);
    EXPECT_EQ(count(take_log(), "ncclCommInitRankConfig"), 0);
    // Another device than that one: kolo's NCCL path has one GPU per rank.
    f.pending.emplace("grad", joined_stand_in("grad", 2, zeros));
    const std::string error = run_error(f, peers);
    EXPECT_NE(error.find("rank 0: hvd.join(device=2) for the CUDA allreduce of 'grad', but this "
                         "rank's CUDA operations ran on device 0"),
              std::string::npos)
        << error;
  }
}

// The front end's allocator is asked for the agreed shape on this thread, NCCL writes into what
// it returned, and the handle carries the shape; an allocator that throws fails the op naming
// the rank, before any NCCL collective.
TEST(ExecutorNccl, AllgatherWritesIntoTheAllocatorsMemoryAndAFailingAllocatorFailsTheOp) {
  Fixture f;
  std::vector<float> x{1, 2, 3, 4};
  Request rx = cuda_request("gathered", OpType::allgather, UserReduceOp::sum, 4);
  rx.shape = {2, 2};
  std::vector<float> out(4, -1);
  std::vector<std::vector<int64_t>> asked;
  f.submit(rx, x);
  f.pending.at("gathered").device_allocator = [&](const std::vector<int64_t>& shape) {
    asked.push_back(shape);
    return DeviceOutputMemory{reinterpret_cast<std::uintptr_t>(out.data()), 0};
  };
  const HandleId id = f.pending.at("gathered").handle;
  f.executor.run({negotiation::make_response({rx})}, f.pending);
  OwnedBuffer done = f.handles.release(id);
  EXPECT_EQ(asked, (std::vector<std::vector<int64_t>>{{2, 2}}));
  EXPECT_EQ(out, x);
  EXPECT_EQ(done.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_NE(done.device_done, 0U);
  EXPECT_EQ(count(take_log(), "ncclAllGather n=16 type=1"), 1);

  const HandleId failing = f.submit(rx, x);
  f.pending.at("gathered").device_allocator =
      [](const std::vector<int64_t>&) -> DeviceOutputMemory { throw Error("CUDA out of memory"); };
  f.executor.run({negotiation::make_response({rx})}, f.pending);
  try {
    f.handles.wait(failing);
    FAIL() << "no error";
  } catch (const Error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("rank 0: allgather of CUDA tensor 'gathered': allocating its output of "
                        "shape [2, 2] on CUDA device 0 failed: CUDA out of memory"),
              std::string::npos)
        << what;
  }
  EXPECT_EQ(count(take_log(), "ncclAllGather"), 0);
}

// Rank 1 of 3: alltoall's output has the rows the splits send it, reducescatter's its block of
// Horovod's row split; a rank whose allocation failed (the agreement says so) fails the op here
// too, naming it, before any collective.
TEST(ExecutorNccl, TheAllocatorIsAskedForTheAgreedShapeAtRankOneOfThree) {
  Fixture f({1, 3, 1 << 20});
  std::vector<float> x(10, 1.0F);
  std::vector<float> out(12, 0.0F);
  std::vector<std::vector<int64_t>> asked;
  auto allocator = [&](const std::vector<int64_t>& shape) {
    asked.push_back(shape);
    return DeviceOutputMemory{reinterpret_cast<std::uintptr_t>(out.data()), 0};
  };
  Request ra = cuda_request("a2a", OpType::alltoall, UserReduceOp::sum, 8);
  ra.rank = 1;
  ra.shape = {4, 2};
  f.submit(ra, x);
  f.pending.at("a2a").device_allocator = allocator;
  negotiation::Response a2a = negotiation::make_response({ra});
  a2a.splits = {2, 1, 0, /* rank 1 sends */ 1, 2, 1, 0, 3, 0};  // [r * 3 + d]: rows r sends d
  const HandleId ha = f.pending.at("a2a").handle;
  f.executor.run({a2a}, f.pending);
  OwnedBuffer done = f.handles.release(ha);
  EXPECT_EQ(done.shape, (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(done.received_splits, (std::vector<int64_t>{1, 2, 3}));
  std::string log = take_log();
  for (const char* call : {"ncclSend n=8 peer=0", "ncclRecv n=8 peer=0", "ncclSend n=16 peer=1",
                           "ncclRecv n=16 peer=1", "ncclSend n=8 peer=2", "ncclRecv n=24 peer=2"}) {
    EXPECT_EQ(count(log, call), 1) << call << "\n" << log;
  }

  Request rs = cuda_request("rs", OpType::reducescatter, UserReduceOp::sum, 10);
  rs.rank = 1;
  rs.shape = {5, 2};  // rows 2, 2, 1
  f.submit(rs, x);
  f.pending.at("rs").device_allocator = allocator;
  f.executor.run({negotiation::make_response({rs})}, f.pending);
  log = take_log();
  EXPECT_EQ(asked.back(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(count(log, "ncclReduce n=4 type=7 op=0 root=0 recv=null"), 1) << log;
  EXPECT_EQ(count(log, "ncclReduce n=4 type=7 op=0 root=1 S"), 1) << log;
  EXPECT_EQ(count(log, "ncclReduce n=2 type=7 op=0 root=2 recv=null"), 1) << log;

  f.backend.failed_rank = 2;
  const HandleId failing = f.submit(rs, x);
  f.pending.at("rs").device_allocator = allocator;
  f.executor.run({negotiation::make_response({rs})}, f.pending);
  try {
    f.handles.wait(failing);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("rank 1: reducescatter of CUDA tensor 'rs' not run: rank 2 could not "
                        "allocate its output"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(count(take_log(), "ncclReduce"), 0);
}

// Point 5 of issue 23: a collective that NCCL never finishes (its peer died inside it) ends when
// kolo's CPU side sees the death: the watch is asked between polls, the communicator is aborted,
// and the group fails with PeerError naming the rank (the session's fatal path).
TEST(ExecutorNccl, APeerDeathSeenByTheCpuAbortsAnNcclOpThatNeverCompletes) {
  Fixture f;
  int asked = 0;
  bool peer_dead = false;
  f.executor.set_device_watch(  // given before the communicator is made, as ProcessSet does
      [&]() -> std::optional<gpu::PeerFailure> {
        ++asked;
        if (!peer_dead) return std::nullopt;
        return gpu::PeerFailure{2, "rank 2 closed its connection"};
      },
      std::chrono::minutes(5));
  std::vector<float> x{1, 2};
  const Request rx = cuda_request("x", OpType::broadcast, UserReduceOp::sum, 2);
  f.submit(rx, x);
  f.executor.run({negotiation::make_response({rx})}, f.pending);  // the communicator exists
  asked = 0;
  peer_dead = true;
  void* fake = ::dlopen(FAKE_GPU_DEVICE, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(fake, nullptr);
  // ncclAllReduce answers ncclInProgress, and so does every poll after it: never done.
  reinterpret_cast<void (*)(int, int)>(::dlsym(fake, "fake_gpu_in_progress"))(1 << 30, 0);
  std::vector<float> g{3, 4};
  const Request rg = cuda_request("grad", OpType::allreduce, UserReduceOp::sum, 2);
  f.submit(rg, g);
  take_log();
  try {
    f.executor.run({negotiation::make_response({rg})}, f.pending);
    FAIL() << "the op ended without the peer's failure";
  } catch (const PeerError& error) {
    EXPECT_EQ(error.peer_rank(), 2);
    EXPECT_NE(std::string(error.what()).find("rank 2 closed its connection"), std::string::npos)
        << error.what();
  }
  reinterpret_cast<void (*)(int, int)>(::dlsym(fake, "fake_gpu_in_progress"))(-1, 0);
  EXPECT_EQ(asked, 1);  // the first poll still in progress asked, and learned of the death
  const std::string log = take_log();
  EXPECT_EQ(count(log, "ncclCommAbort"), 1) << log;
  EXPECT_LT(log.find("ncclAllReduce"), log.find("ncclCommAbort")) << log;
  f.executor.drop_device_state();  // the session's end: nothing left to abort twice
  EXPECT_EQ(count(take_log(), "ncclCommAbort"), 0);
}

}  // namespace
}  // namespace kolo::core
