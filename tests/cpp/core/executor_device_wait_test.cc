// The asynchronous host path's one step inside the core: an entry carrying a device event
// (TensorEntry::ready_event) is not read before the executor waited for that event on its device.
// The stand-in CUDA runtime (tests/cpp/gpu/fakes/fake_cudart.cc) is loaded first, as torch's CUDA
// build loads its own, so gpu::cuda_runtime() finds it "already loaded by the process" and writes
// down which event it synchronized on which device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>

#include "backends/kolo_backend.h"
#include "base/errors.h"
#include "comm/rank_threads.h"
#include "core/executor.h"
#include "gpu/cuda_runtime.h"
#include "negotiation/request_checks.h"

namespace kolo::core {
namespace {

using negotiation::OpType;
using negotiation::Request;
using negotiation::UserReduceOp;

const std::uintptr_t* fake_runtime_record() {
  static void* runtime = ::dlopen(FAKE_CUDART_GOOD, RTLD_NOW | RTLD_GLOBAL);
  EXPECT_NE(runtime, nullptr) << ::dlerror();
  return static_cast<const std::uintptr_t*>(::dlsym(runtime, "fake_cudart_synchronized"));
}

Request sum_of(int rank, int elements) {
  Request r;
  r.rank = rank;
  r.name = "grad";
  r.op = OpType::allreduce;
  r.reduce_op = UserReduceOp::sum;
  r.dtype = DataType::float32;
  r.shape = {elements};
  return r;
}

// Runs one allreduce of "grad" on two ranks; rank 0's entry carries `event` on `device`. Returns
// rank 0's result and the error its executor threw, if any (its link is then closed, as a dying
// process's would be, so rank 1 fails too instead of waiting).
std::pair<std::vector<float>, std::string> run_with_event(std::uintptr_t event, int device) {
  std::vector<float> rank0_values;
  comm::testing::RankThreads group(2);
  const auto errors = group.run_collect([&](comm::Communicator& comm) {
    backends::KoloBackend backend(comm, comm::AllreduceOptions{});
    HandleTable handles;
    Executor executor(backend, handles, ExecutorOptions{comm.rank(), 2, 1 << 20});
    std::vector<float> data(4, static_cast<float>(comm.rank() + 1));
    std::map<std::string, TensorEntry> pending;
    TensorEntry entry;
    entry.request = sum_of(comm.rank(), 4);
    entry.input = data.data();
    entry.output = data.data();
    entry.handle = handles.create();
    if (comm.rank() == 0) {
      entry.ready_event = event;
      entry.ready_device = device;
    }
    const HandleId id = entry.handle;
    pending.emplace("grad", std::move(entry));
    const std::vector<Request> requests{sum_of(0, 4), sum_of(1, 4)};
    executor.run({negotiation::make_response(requests)}, pending);
    handles.wait(id);
    if (comm.rank() == 0) rank0_values = data;
  });
  std::string rank0_error;
  if (errors[0]) {
    try {
      std::rethrow_exception(errors[0]);
    } catch (const std::exception& error) {
      rank0_error = error.what();
    }
  }
  return {rank0_values, rank0_error};
}

TEST(ExecutorDeviceWait, WaitsForTheEntrysEventOnItsDeviceBeforeReading) {
  const std::uintptr_t* record = fake_runtime_record();
  ASSERT_NE(record, nullptr);
  ASSERT_TRUE(gpu::cuda_runtime().status.loaded) << gpu::cuda_runtime().status.reason;
  ASSERT_EQ(gpu::cuda_runtime().status.origin, "already loaded by the process");
  auto [values, error] = run_with_event(0x77, 0);
  EXPECT_EQ(error, "");
  EXPECT_EQ(values, std::vector<float>(4, 3.0F));
  EXPECT_EQ(record[0], 0x77U);  // that event
  EXPECT_EQ(record[1], 0U);     // on its device, set first
}

TEST(ExecutorDeviceWait, AFailedWaitFailsTheRankNamingTheDevice) {
  ASSERT_NE(fake_runtime_record(), nullptr);
  auto [values, error] = run_with_event(0x78, 3);  // the fake has no device 3
  EXPECT_EQ(error,
            "cudaSetDevice on CUDA device 3: invalid device ordinal (fake) (cudaError_t 101)");
  EXPECT_NE(fake_runtime_record()[0], 0x78U);  // never synchronized: nothing was read
}

}  // namespace
}  // namespace kolo::core
