// The NCCL backend's collectives against the stand-in GPU (tests/cpp/gpu/fakes/fake_gpu_device.cc:
// device memory is host memory, every CUDA and NCCL call is logged). At nranks 1 the bytes are
// checked; a communicator of 3 ranks checks the calls of the uneven and grouped forms.
#include "gpu/nccl_collectives.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/errors.h"

namespace kolo::gpu {
namespace {

using std::chrono::milliseconds;

const CudaRuntime& fake_cuda() {
  static const CudaRuntime cuda =
      load_cuda_runtime({{LibraryCandidate::How::explicit_path, FAKE_GPU_DEVICE, "test"}});
  return cuda;
}
const NcclLibrary& fake_nccl() {
  static const NcclLibrary nccl =
      load_nccl({{LibraryCandidate::How::explicit_path, FAKE_GPU_DEVICE, "test"}});
  return nccl;
}

template <typename Function>
Function* control(const char* name) {
  void* handle = ::dlopen(FAKE_GPU_DEVICE, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr);
  return reinterpret_cast<Function*>(::dlsym(handle, name));
}
std::string take_log() {
  std::string log = control<const char*()>("fake_gpu_log")();
  control<void()>("fake_gpu_clear_log")();
  return log;
}
void fail_next(const char* function, int code) {
  control<void(const char*, int)>("fake_gpu_fail")(function, code);
}
void in_progress(int polls, int after) {
  control<void(int, int)>("fake_gpu_in_progress")(polls, after);
}

// The lines of `log` that begin with one of `prefixes`, in order.
std::vector<std::string> lines(const std::string& log, const std::vector<std::string>& prefixes) {
  std::vector<std::string> kept;
  size_t start = 0;
  while (start < log.size()) {
    const size_t end = log.find('\n', start);
    const std::string line = log.substr(start, end - start);
    for (const auto& prefix : prefixes) {
      if (line.rfind(prefix, 0) == 0) {
        kept.push_back(line);
        break;
      }
    }
    start = end + 1;
  }
  return kept;
}

// A communicator, kolo's stream and the caller's stream, on the fake.
struct Fixture {
  explicit Fixture(int size = 1, int rank = 0)
      : comm(NcclCommunicator::create(fake_nccl(), rank, size, ncclUniqueId{}, {},
                                      milliseconds(5000))),
        ops(fake_cuda(), fake_nccl(), comm,
            {.rank = rank, .size = size, .device = 0, .watch = {}}) {
    fake_cuda().functions.stream_create_with_flags(&caller, 0);
    fake_cuda().functions.event_create_with_flags(&ready, kCudaEventDisableTiming);
    take_log();
  }
  ~Fixture() {
    fake_cuda().functions.event_destroy(ready);
    fake_cuda().functions.stream_destroy(caller);
  }
  NcclCommunicator comm;
  NcclCollectives ops;
  cudaStream_t caller = nullptr;
  cudaEvent_t ready = nullptr;
};

TEST(NcclCollectives, LoadsTheFakeAsBothLibraries) {
  ASSERT_TRUE(fake_cuda().status.loaded) << fake_cuda().status.reason;
  ASSERT_TRUE(fake_nccl().status.loaded) << fake_nccl().status.reason;
}

TEST(NcclCollectives, SubmitWaitsOnTheCallersEventThenReducesOnKolosStreamThenRecords) {
  Fixture f;
  std::vector<float> data{1, 2, 3, 4};
  std::vector<float> out(4, 0);
  const DeviceTensor tensor{"grad", data.data(), out.data(), data.size() * sizeof(float)};
  f.ops.wait_for_caller(f.ready, {"grad"});
  f.ops.allreduce({&tensor, 1}, DataType::float32, {.op = ReduceOp::sum});
  DeviceEvent done = f.ops.record_completion();
  stream_waits_for(fake_cuda(), f.caller, done.get(), 0);
  EXPECT_EQ(out, data);  // one rank's sum
  // kolo's stream is S2 here only if no other test made streams first: read its name.
  const std::string log = take_log();
  const auto calls = lines(log, {"cudaStreamWaitEvent", "ncclAllReduce", "cudaEventRecord"});
  ASSERT_EQ(calls.size(), 4U) << log;
  const std::string kolo_stream = calls[0].substr(calls[0].find(' ') + 1, 2);
  EXPECT_NE(calls[0].find(" E"), std::string::npos);  // the caller's event
  EXPECT_EQ(calls[1], "ncclAllReduce n=4 type=7 op=0 " + kolo_stream);
  EXPECT_EQ(calls[2].rfind("cudaEventRecord E", 0), 0U);
  EXPECT_NE(calls[2].find(kolo_stream), std::string::npos);  // completion on kolo's stream
  // synchronize(): the caller's stream, not kolo's, waits for the completion event.
  EXPECT_EQ(calls[3].find(kolo_stream), std::string::npos) << calls[3];
  EXPECT_EQ(lines(log, {"ncclGroup", "cudaMemcpyAsync", "cudaMalloc"}).size(), 0U);
}

TEST(NcclCollectives, FusedTensorsGoThroughTheDeviceFusionBufferWithOnePreMulSum) {
  Fixture f(2, 1);  // rank 1 of 2: the fake records the calls (a scale on one rank is refused)
  std::vector<float> a{1, 2, 3}, b{10, 20}, c{100};
  std::vector<float> a_out(3), b_out(2), c_out(1);
  const std::vector<DeviceTensor> tensors{{"a", a.data(), a_out.data(), 12},
                                          {"b", b.data(), b_out.data(), 8},
                                          {"c", c.data(), c_out.data(), 4}};
  f.ops.allreduce(tensors, DataType::float32,
                  {.op = ReduceOp::sum, .average = true, .prescale = 3.0, .postscale = 0.5});
  EXPECT_EQ(f.ops.fusion_buffer_bytes(), 192U);  // three 64-byte aligned slots
  const std::string log = take_log();
  const auto calls =
      lines(log, {"cudaMalloc", "cudaMemcpyAsync", "ncclRedOp", "ncclAllReduce", "ncclGroup"});
  ASSERT_EQ(calls.size(), 10U) << log;
  EXPECT_EQ(calls[0], "cudaMalloc 192");
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(calls[i].rfind("cudaMemcpyAsync", 0), 0U) << calls[i];
  EXPECT_NE(calls[1].find(" kind=4 "), std::string::npos);  // cudaMemcpyDefault: device to device
  // 3 * 0.5 / 2 ranks, as one host-immediate float scalar.
  EXPECT_EQ(calls[4].rfind("ncclRedOpCreatePreMulSum type=7 scalar=0.750000 residence=1", 0), 0U)
      << calls[4];
  EXPECT_EQ(calls[5].rfind("ncclAllReduce n=48 type=7 op=5 in-place", 0), 0U) << calls[5];
  EXPECT_EQ(calls[6], "ncclRedOpDestroy op=5");
  for (int i = 7; i <= 9; ++i) EXPECT_EQ(calls[i].rfind("cudaMemcpyAsync", 0), 0U) << calls[i];
  // A second, smaller group reuses the buffer.
  f.ops.allreduce(tensors, DataType::float32, {.op = ReduceOp::max});
  const std::string second = take_log();
  EXPECT_EQ(lines(second, {"cudaMalloc"}).size(), 0U);
  EXPECT_EQ(lines(second, {"ncclAllReduce n=48 type=7 op=2"}).size(), 1U) << second;
}

TEST(NcclCollectives, AverageWithoutScalesIsNcclAvgAndOpsMapToNcclsOwn) {
  Fixture f(2, 1);  // rank 1 of 2 (alone, an Average is a Sum)
  std::vector<double> data{2, 4};
  const DeviceTensor tensor{"x", data.data(), data.data(), 16};
  f.ops.allreduce({&tensor, 1}, DataType::float64, {.op = ReduceOp::sum, .average = true});
  f.ops.allreduce({&tensor, 1}, DataType::float64, {.op = ReduceOp::min});
  f.ops.allreduce({&tensor, 1}, DataType::float64, {.op = ReduceOp::product});
  const auto calls = lines(take_log(), {"ncclAllReduce", "ncclRedOp"});
  ASSERT_EQ(calls.size(), 3U);
  EXPECT_EQ(calls[0].rfind("ncclAllReduce n=2 type=8 op=4 in-place", 0), 0U);  // ncclAvg
  EXPECT_EQ(calls[1].rfind("ncclAllReduce n=2 type=8 op=3", 0), 0U);           // ncclMin
  EXPECT_EQ(calls[2].rfind("ncclAllReduce n=2 type=8 op=1", 0), 0U);           // ncclProd
}

TEST(NcclCollectives, HalfScalarsAreHalfBits) {
  Fixture f(2, 1);                        // rank 1 of 2 (a scale on one rank is refused)
  std::vector<uint16_t> data(4, 0x3c00);  // 1.0 in float16
  const DeviceTensor tensor{"h", data.data(), data.data(), 8};
  f.ops.allreduce({&tensor, 1}, DataType::float16, {.op = ReduceOp::sum, .prescale = 0.5});
  const auto calls = lines(take_log(), {"ncclRedOpCreatePreMulSum"});
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls[0].rfind("ncclRedOpCreatePreMulSum type=6 scalar=bits:14336", 0), 0U)  // 0x3800
      << calls[0];
}

TEST(NcclCollectives, ATypeNcclLacksOrAScaleItCannotApplyFailsBeforeAnyCall) {
  Fixture f;
  std::vector<int16_t> shorts(4);
  const DeviceTensor tensor{"shorts", shorts.data(), shorts.data(), 8};
  EXPECT_THROW(f.ops.allreduce({&tensor, 1}, DataType::int16, {}), InvalidArgument);
  std::vector<int32_t> ints(4);
  const DeviceTensor int_tensor{"ints", ints.data(), ints.data(), 16};
  try {
    f.ops.allreduce({&int_tensor, 1}, DataType::int32, {.op = ReduceOp::sum, .prescale = 2});
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("rank 0: allreduce of tensor 'ints'"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(
      f.ops.allreduce({&int_tensor, 1}, DataType::int32, {.op = ReduceOp::max, .postscale = 2}),
      InvalidArgument);
  EXPECT_EQ(lines(take_log(), {"nccl", "cuda"}).size(), 0U);
  EXPECT_FALSE(f.comm.aborted());  // only those tensors fail
}

TEST(NcclCollectives, BroadcastAllgatherAlltoallReducescatterAtOneRank) {
  Fixture f;
  std::vector<int32_t> in{1, 2, 3, 4}, out(4, 0);
  const DeviceTensor tensor{"t", in.data(), out.data(), 16};
  f.ops.broadcast(tensor, 0);
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0);
  const std::vector<size_t> one_block{16};
  f.ops.allgatherv(tensor, out.data(), one_block);
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0);
  f.ops.alltoallv(tensor, one_block, out.data(), one_block);
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0);
  const std::vector<size_t> counts{4};
  f.ops.reducescatter(tensor, out.data(), counts, DataType::int32,
                      {.op = ReduceOp::sum, .average = true});
  EXPECT_EQ(out, in);
  const auto calls = lines(take_log(), {"nccl"});
  ASSERT_EQ(calls.size(), 7U);
  EXPECT_EQ(calls[0].rfind("ncclBroadcast n=16 type=1 root=0", 0), 0U);
  EXPECT_EQ(calls[1].rfind("ncclAllGather n=16 type=1", 0), 0U);
  EXPECT_EQ(calls[2], "ncclGroupStart");
  EXPECT_EQ(calls[3].rfind("ncclSend n=16 peer=0", 0), 0U);
  EXPECT_EQ(calls[4].rfind("ncclRecv n=16 peer=0", 0), 0U);
  EXPECT_EQ(calls[5], "ncclGroupEnd");
  // Alone, an Average is the tensor itself: ncclSum (op 0), never NCCL's one-rank ncclAvg.
  EXPECT_EQ(calls[6].rfind("ncclReduceScatter n=4 type=2 op=0", 0), 0U);
}

TEST(NcclCollectives, AloneAnAverageIsASumAndAScaleIsRefused) {
  Fixture f;
  std::vector<float> data{1, 2, 3};
  const DeviceTensor tensor{"a", data.data(), data.data(), 12};
  f.ops.allreduce({&tensor, 1}, DataType::float32, {.op = ReduceOp::sum, .average = true});
  const auto calls = lines(take_log(), {"nccl"});
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls[0].rfind("ncclAllReduce n=3 type=7 op=0", 0), 0U) << calls[0];
  try {
    f.ops.allreduce({&tensor, 1}, DataType::float32, {.op = ReduceOp::sum, .prescale = 2});
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("applied by the framework front end"),
              std::string::npos)
        << error.what();
  }
}

TEST(NcclCollectives, UnevenFormsAreGroupsOfPerRankCalls) {
  Fixture f(3, 1);  // rank 1 of 3: the fake records the calls
  std::vector<std::byte> in(64), out(64);
  const DeviceTensor tensor{"rows", in.data(), out.data(), 8};
  const std::vector<size_t> send{4, 0, 12}, recv{0, 8, 4};
  f.ops.alltoallv(tensor, send, out.data(), recv);
  auto calls = lines(take_log(), {"nccl"});
  ASSERT_EQ(calls.size(), 6U);
  EXPECT_EQ(calls[1].rfind("ncclSend n=4 peer=0", 0), 0U);
  EXPECT_EQ(calls[2].rfind("ncclRecv n=8 peer=1", 0), 0U);  // nothing sent to self, 8 received
  EXPECT_EQ(calls[3].rfind("ncclSend n=12 peer=2", 0), 0U);
  EXPECT_EQ(calls[4].rfind("ncclRecv n=4 peer=2", 0), 0U);
  const std::vector<size_t> counts{2, 1, 1};
  f.ops.reducescatter({"rs", in.data(), out.data(), 16}, out.data(), counts, DataType::float32,
                      {.op = ReduceOp::max});
  calls = lines(take_log(), {"nccl"});
  ASSERT_EQ(calls.size(), 5U);
  EXPECT_EQ(calls[1].rfind("ncclReduce n=2 type=7 op=2 root=0 recv=null", 0), 0U) << calls[1];
  EXPECT_EQ(calls[2].rfind("ncclReduce n=1 type=7 op=2 root=1 S", 0), 0U) << calls[2];
  EXPECT_EQ(calls[3].rfind("ncclReduce n=1 type=7 op=2 root=2 recv=null", 0), 0U) << calls[3];
}

TEST(NcclCollectives, UnevenAllgatherBroadcastsEachRanksBlockIntoItsPlace) {
  Fixture f(3, 1);
  std::vector<std::byte> in(8), out(12);
  f.ops.allgatherv({"rows", in.data(), out.data(), 8}, out.data(), std::vector<size_t>{4, 8, 0});
  const auto calls = lines(take_log(), {"nccl"});
  ASSERT_EQ(calls.size(), 4U);
  EXPECT_EQ(calls[0], "ncclGroupStart");
  EXPECT_EQ(calls[1].rfind("ncclBroadcast n=4 type=1 root=0", 0), 0U);
  EXPECT_EQ(calls[2].rfind("ncclBroadcast n=8 type=1 root=1", 0), 0U);  // rank 2 sends nothing
  EXPECT_EQ(calls[3], "ncclGroupEnd");
}

TEST(NcclCollectives, NcclsErrorNamesRankOpAndTensorAndAbortsTheCommunicator) {
  Fixture f;
  std::vector<float> data(2);
  const DeviceTensor tensor{"layer1.weight", data.data(), data.data(), 8};
  fail_next("ncclAllReduce", ncclUnhandledCudaError);
  try {
    f.ops.allreduce({&tensor, 1}, DataType::float32, {});
    FAIL() << "no error";
  } catch (const PeerError&) {
    FAIL() << "not a peer's failure";
  } catch (const Error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("rank 0: allreduce of tensor 'layer1.weight': ncclAllReduce failed: "
                        "fake NCCL error (ncclResult_t 1) (fake last error)"),
              std::string::npos)
        << what;
  }
  EXPECT_TRUE(f.comm.aborted());
  EXPECT_EQ(lines(take_log(), {"ncclCommAbort"}).size(), 1U);
}

TEST(NcclCollectives, APeersFailureWhileNcclIsInProgressAbortsAndNamesThePeer) {
  NcclCommunicator comm =
      NcclCommunicator::create(fake_nccl(), 0, 3, ncclUniqueId{}, {}, milliseconds(5000));
  int polls = 0;
  NcclCollectives ops(fake_cuda(), fake_nccl(), comm,
                      {.rank = 0,
                       .size = 3,
                       .device = 0,
                       .watch = [&polls]() -> std::optional<PeerFailure> {
                         if (++polls < 3) return std::nullopt;
                         return PeerFailure{2, "rank 2 closed its connection"};
                       },
                       .timeout = milliseconds(5000)});
  take_log();
  in_progress(1000, ncclSuccess);
  std::vector<std::byte> in(12), out(12);
  try {
    ops.alltoallv({"t", in.data(), out.data(), 12}, std::vector<size_t>{4, 4, 4}, out.data(),
                  std::vector<size_t>{4, 4, 4});
    FAIL() << "no error";
  } catch (const PeerError& error) {
    EXPECT_EQ(error.peer_rank(), 2);
    EXPECT_NE(std::string(error.what()).find("alltoall of tensor 't'"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(polls, 3);
  EXPECT_TRUE(comm.aborted());
  const auto calls = lines(take_log(), {"ncclGroupEnd", "ncclCommAbort"});
  EXPECT_EQ(calls, (std::vector<std::string>{"ncclGroupEnd", "ncclCommAbort"}));
  in_progress(0, ncclSuccess);  // leave the fake unscripted
}

TEST(NcclCollectives, AnErrorInsideAGroupClosesTheGroupThenAborts) {
  Fixture f(3, 0);
  std::vector<std::byte> in(12), out(12);
  fail_next("ncclSend", ncclInvalidArgument);
  try {
    f.ops.alltoallv({"split", in.data(), out.data(), 12}, std::vector<size_t>{4, 4, 4}, out.data(),
                    std::vector<size_t>{4, 4, 4});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("rank 0: alltoall of tensor 'split': "
                        "ncclSend/ncclRecv failed: fake NCCL error"),
              std::string::npos)
        << error.what();
  }
  const auto calls = lines(take_log(), {"nccl"});
  ASSERT_EQ(calls.size(), 4U);
  EXPECT_EQ(calls[0], "ncclGroupStart");
  EXPECT_EQ(calls[1].rfind("ncclSend n=4 peer=0", 0), 0U);  // failed: no ncclRecv after it
  EXPECT_EQ(calls[2], "ncclGroupEnd");
  EXPECT_EQ(calls[3], "ncclCommAbort");
}

TEST(NcclCollectives, ACudaErrorNamesTheCallAndTheDevice) {
  Fixture f;
  std::vector<float> a(2), b(2);
  const std::vector<DeviceTensor> tensors{{"a", a.data(), a.data(), 8},
                                          {"b", b.data(), b.data(), 8}};
  fail_next("cudaMalloc", 2);
  try {
    f.ops.allreduce(tensors, DataType::float32, {});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(
        std::string(error.what())
            .find("rank 0: allocating the fusion buffer of tensors 'a', 'b': cudaMalloc failed "
                  "on CUDA device 0: out of memory (fake) (cudaError_t 2)"),
        std::string::npos)
        << error.what();
  }
}

// HOROVOD_HIERARCHICAL_ALLREDUCE at local rank 1 of 2 (the root of the remainder): 11 elements
// are 5 per local rank through ncclReduceScatter and 1 through ncclReduce; this rank's shard and
// the remainder (6 elements) go to host memory, through the cross-host step and back, then
// ncclAllGather and ncclBroadcast rebuild the buffer. A host communicator of 2 ranks only
// records, so the bytes seen across are the buffer's own.
TEST(NcclCollectives, HierarchicalAllreduceCarriesTheShardAcrossThroughHostMemory) {
  Fixture f(4, 1);
  NcclCommunicator host =
      NcclCommunicator::create(fake_nccl(), 1, 2, ncclUniqueId{}, {}, milliseconds(5000));
  take_log();
  std::vector<float> data(11);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i);
  std::vector<float> across;
  const CrossHostStage stage{.host = &host,
                             .local_rank = 1,
                             .local_size = 2,
                             .homogeneous = true,
                             .allreduce = [&](std::span<std::byte> bytes, size_t count) {
                               EXPECT_EQ(bytes.size(), count * sizeof(float));
                               auto* values = reinterpret_cast<float*>(bytes.data());
                               across.assign(values, values + count);
                               for (size_t i = 0; i < count; ++i)
                                 values[i] *= 10;  // the "other hosts" added theirs
                             }};
  const DeviceTensor tensor{"grad", data.data(), data.data(), data.size() * sizeof(float)};
  f.ops.allreduce_hierarchical({&tensor, 1}, DataType::float32, {.op = ReduceOp::sum}, stage);
  EXPECT_EQ(across, (std::vector<float>{5, 6, 7, 8, 9, 10}));  // shard 1 and the remainder
  EXPECT_EQ(data, (std::vector<float>{0, 1, 2, 3, 4, 50, 60, 70, 80, 90, 100}));
  const std::string log = take_log();
  const auto calls = lines(log, {"nccl", "cudaMemcpyAsync"});
  ASSERT_EQ(calls.size(), 6U) << log;
  EXPECT_EQ(calls[0].rfind("ncclReduceScatter n=5 type=7 op=0 ", 0), 0U) << log;
  EXPECT_EQ(calls[1].rfind("ncclReduce n=1 type=7 op=0 root=1 ", 0), 0U) << log;
  EXPECT_EQ(calls[2].rfind("cudaMemcpyAsync 24 ", 0), 0U) << log;
  EXPECT_EQ(calls[3].rfind("cudaMemcpyAsync 24 ", 0), 0U) << log;
  EXPECT_EQ(calls[4].rfind("ncclAllGather n=5 type=7 ", 0), 0U) << log;
  EXPECT_EQ(calls[5].rfind("ncclBroadcast n=1 type=7 root=1 ", 0), 0U) << log;
}

// A peer that dies inside the host's reduce-scatter leaves the shard's copy to host memory
// waiting for ever: kolo's thread polls it and asks the watch, which aborts the host
// communicator and names the rank; nothing crosses hosts.
TEST(NcclCollectives, APeerFailureWhileTheShardIsCopiedOutAbortsNamingTheRank) {
  NcclCommunicator comm =
      NcclCommunicator::create(fake_nccl(), 0, 4, ncclUniqueId{}, {}, milliseconds(5000));
  NcclCommunicator host =
      NcclCommunicator::create(fake_nccl(), 0, 2, ncclUniqueId{}, {}, milliseconds(5000));
  int polls = 0;
  NcclCollectives ops(fake_cuda(), fake_nccl(), comm,
                      {.rank = 0,
                       .size = 4,
                       .device = 0,
                       .watch = [&]() -> std::optional<PeerFailure> {
                         if (++polls < 3) return std::nullopt;
                         return PeerFailure{2, "rank 2 closed its connection"};
                       },
                       .timeout = milliseconds(5000)});
  take_log();
  control<void(int)>("fake_gpu_events_not_ready")(1000);
  bool crossed = false;
  const CrossHostStage stage{.host = &host,
                             .local_rank = 0,
                             .local_size = 2,
                             .homogeneous = true,
                             .allreduce = [&](std::span<std::byte>, size_t) { crossed = true; }};
  std::vector<float> data(8, 1.0F);
  const DeviceTensor tensor{"grad", data.data(), data.data(), data.size() * sizeof(float)};
  try {
    ops.allreduce_hierarchical({&tensor, 1}, DataType::float32, {.op = ReduceOp::sum}, stage);
    FAIL() << "no error";
  } catch (const PeerError& error) {
    EXPECT_EQ(error.peer_rank(), 2);
    EXPECT_NE(std::string(error.what()).find("rank 2 closed its connection"), std::string::npos)
        << error.what();
  }
  control<void(int)>("fake_gpu_events_not_ready")(0);
  EXPECT_FALSE(crossed);
  EXPECT_TRUE(host.aborted());
  EXPECT_EQ(polls, 3);
}

TEST(NcclCollectives, TheCommunicatorIsMadeFromRankZerosIdSentByKolo) {
  std::vector<std::byte> shared;
  NcclCommunicator comm = rendezvous_communicator(
      fake_nccl(), 0, 1, [&](std::span<std::byte> id) { shared.assign(id.begin(), id.end()); }, {},
      milliseconds(5000));
  EXPECT_FALSE(comm.aborted());
  ASSERT_EQ(shared.size(), 128U);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(shared.data())), "fake-nccl-id");
  const auto calls = lines(take_log(), {"ncclGetUniqueId", "ncclCommInitRankConfig"});
  ASSERT_EQ(calls.size(), 2U);
  EXPECT_EQ(calls[1], "ncclCommInitRankConfig nranks=1 rank=0 id=fake-nccl-id");
}

TEST(NcclCollectives, OtherRanksAskNoIdAndUseTheOneTheyReceive) {
  NcclCommunicator comm = rendezvous_communicator(
      fake_nccl(), 1, 2, [](std::span<std::byte> id) { std::memcpy(id.data(), "from-rank-0", 12); },
      {}, milliseconds(5000));
  const auto calls = lines(take_log(), {"ncclGetUniqueId", "ncclCommInitRankConfig"});
  EXPECT_EQ(calls,
            (std::vector<std::string>{"ncclCommInitRankConfig nranks=2 rank=1 id=from-rank-0"}));
}

}  // namespace
}  // namespace kolo::gpu
