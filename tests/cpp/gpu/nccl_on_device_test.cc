// The NCCL backend's collectives on a real GPU with the real NCCL, at one rank (a lent device:
// scripts/device_check.sh sets KOLO_TEST_CUDART and KOLO_NCCL_LIBRARY to torch's libcudart and
// libnccl and runs this). Every test skips, saying why, where no CUDA device is visible, as in CI.
// Bytes go to the device and back with cudaMemcpyAsync on kolo's stream, waited for through the
// completion event: nothing here needs a CUDA header either.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "base/errors.h"
#include "gpu/nccl_collectives.h"

namespace kolo::gpu {
namespace {

using std::chrono::milliseconds;

const CudaRuntime& real_cuda() {
  static const CudaRuntime cuda = [] {
    const char* path = std::getenv("KOLO_TEST_CUDART");
    if (path == nullptr) return load_cuda_runtime(cuda_runtime_candidates());
    return load_cuda_runtime({{LibraryCandidate::How::explicit_path, path, "KOLO_TEST_CUDART"}});
  }();
  return cuda;
}

// Why these tests cannot run here; nullopt when a device is there.
std::optional<std::string> no_device() {
  if (!real_cuda().status.loaded) return real_cuda().status.reason;
  int devices = 0;
  if (real_cuda().functions.get_device_count(&devices) != kCudaSuccess || devices == 0) {
    return "no CUDA device visible (" + real_cuda().status.describe() + ")";
  }
  if (!nccl_library().status.loaded) return nccl_library().status.reason;
  return std::nullopt;
}

#define SKIP_WITHOUT_DEVICE()                             \
  if (auto reason = no_device()) GTEST_SKIP() << *reason; \
  ASSERT_EQ(real_cuda().functions.set_device(0), kCudaSuccess)

// Device memory holding a copy of `values`, freed when dropped.
struct DeviceBuffer {
  DeviceBuffer(const CudaRuntime& cuda, size_t bytes) : cuda(cuda), bytes(bytes) {
    EXPECT_EQ(cuda.functions.malloc(&pointer, bytes == 0 ? 1 : bytes), kCudaSuccess);
  }
  ~DeviceBuffer() { cuda.functions.free(pointer); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  const CudaRuntime& cuda;
  size_t bytes;
  void* pointer = nullptr;
};

struct OneRank {
  OneRank()
      : comm(rendezvous_communicator(
            nccl_library(), 0, 1, [](std::span<std::byte>) {}, {}, milliseconds(60000))),
        ops(real_cuda(), nccl_library(), comm, {.rank = 0, .size = 1, .device = 0, .watch = {}}) {}
  template <typename T>
  void upload(const DeviceBuffer& device, const std::vector<T>& values) {
    ASSERT_EQ(
        real_cuda().functions.memcpy_async(device.pointer, values.data(), values.size() * sizeof(T),
                                           kCudaMemcpyDefault, ops.stream()),
        kCudaSuccess);
  }
  template <typename T>
  std::vector<T> download(const DeviceBuffer& device, size_t count) {
    std::vector<T> values(count);
    EXPECT_EQ(real_cuda().functions.memcpy_async(values.data(), device.pointer, count * sizeof(T),
                                                 kCudaMemcpyDefault, ops.stream()),
              kCudaSuccess);
    DeviceEvent done = ops.record_completion();
    EXPECT_EQ(real_cuda().functions.event_synchronize(done.get()), kCudaSuccess);
    return values;
  }
  NcclCommunicator comm;
  NcclCollectives ops;
};

TEST(NcclOnDevice, AllreduceAverageAtOneRankIsTheTensorOnTheGpu) {
  SKIP_WITHOUT_DEVICE();
  OneRank r;
  DeviceBuffer a(real_cuda(), 12), b(real_cuda(), 8);
  r.upload(a, std::vector<float>{1, 2, 3});
  r.upload(b, std::vector<float>{10, 20});
  const std::vector<DeviceTensor> tensors{{"a", a.pointer, a.pointer, 12},
                                          {"b", b.pointer, b.pointer, 8}};
  r.ops.allreduce(tensors, DataType::float32, {.op = ReduceOp::sum, .average = true});
  EXPECT_EQ(r.download<float>(a, 3), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(r.download<float>(b, 2), (std::vector<float>{10, 20}));
  // One tensor out of place, 17^3 float32: Horovod's test_horovod_allreduce_average shape, whose
  // last element kolo's one-rank out-of-place ncclAvg lost on the H200 (stale output values).
  const size_t count = 17 * 17 * 17;
  std::vector<float> values(count), stale(count, -1.0F);
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<float>(i % 200) - 100.0F;
  DeviceBuffer in(real_cuda(), count * 4), out(real_cuda(), count * 4);
  r.upload(in, values);
  r.upload(out, stale);
  const DeviceTensor cube{"cube", in.pointer, out.pointer, count * 4};
  r.ops.allreduce({&cube, 1}, DataType::float32, {.op = ReduceOp::sum, .average = true});
  EXPECT_EQ(r.download<float>(out, count), values);
  // A scale at one rank is the framework's to apply (kolo/torch/device_scale.py).
  EXPECT_THROW(r.ops.allreduce(tensors, DataType::float32, {.op = ReduceOp::sum, .prescale = 3}),
               InvalidArgument);
  r.ops.allreduce(tensors, DataType::float32, {.op = ReduceOp::max});
  EXPECT_EQ(r.download<float>(b, 2), (std::vector<float>{10, 20}));
}

TEST(NcclOnDevice, TheCallersStreamWaitsForKolosCompletion) {
  SKIP_WITHOUT_DEVICE();
  OneRank r;
  cudaStream_t caller = nullptr;
  cudaEvent_t ready = nullptr;
  ASSERT_EQ(real_cuda().functions.stream_create_with_flags(&caller, kCudaStreamNonBlocking),
            kCudaSuccess);
  ASSERT_EQ(real_cuda().functions.event_create_with_flags(&ready, kCudaEventDisableTiming),
            kCudaSuccess);
  DeviceBuffer x(real_cuda(), 16);
  std::vector<int32_t> values{1, 2, 3, 4}, back(4, 0);
  ASSERT_EQ(
      real_cuda().functions.memcpy_async(x.pointer, values.data(), 16, kCudaMemcpyDefault, caller),
      kCudaSuccess);
  ASSERT_EQ(real_cuda().functions.event_record(ready, caller), kCudaSuccess);
  r.ops.wait_for_caller(ready, {"x"});
  r.ops.broadcast({"x", x.pointer, x.pointer, 16}, 0);
  DeviceEvent done = r.ops.record_completion();
  stream_waits_for(real_cuda(), caller, done.get(), 0);
  ASSERT_EQ(
      real_cuda().functions.memcpy_async(back.data(), x.pointer, 16, kCudaMemcpyDefault, caller),
      kCudaSuccess);
  ASSERT_EQ(real_cuda().functions.event_record(ready, caller), kCudaSuccess);
  ASSERT_EQ(real_cuda().functions.event_synchronize(ready), kCudaSuccess);
  EXPECT_EQ(back, values);
  real_cuda().functions.event_destroy(ready);
  real_cuda().functions.stream_destroy(caller);
}

TEST(NcclOnDevice, AllgatherAlltoallReducescatterAtOneRank) {
  SKIP_WITHOUT_DEVICE();
  OneRank r;
  const std::vector<double> values{1, 2, 3, 4};
  DeviceBuffer in(real_cuda(), 32), out(real_cuda(), 32);
  r.upload(in, values);
  const DeviceTensor tensor{"t", in.pointer, out.pointer, 32};
  r.ops.allgatherv(tensor, out.pointer, std::vector<size_t>{32});
  EXPECT_EQ(r.download<double>(out, 4), values);
  r.upload(out, std::vector<double>(4, 0));
  r.ops.alltoallv(tensor, std::vector<size_t>{32}, out.pointer, std::vector<size_t>{32});
  EXPECT_EQ(r.download<double>(out, 4), values);
  r.upload(out, std::vector<double>(4, 0));
  r.ops.reducescatter(tensor, out.pointer, std::vector<size_t>{4}, DataType::float64,
                      {.op = ReduceOp::sum, .average = true});
  EXPECT_EQ(r.download<double>(out, 4), values);
}

}  // namespace
}  // namespace kolo::gpu
