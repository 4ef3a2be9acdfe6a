// CUDA IPC for ranks sharing a GPU, against the stand-in runtime (fakes/fake_cudart.cc: every call
// that needs a device answers "no device", device 0 is the only one cudaSetDevice accepts), with
// no GPU: what is missing and which call failed on which device are named.
#include "gpu/cuda_ipc.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "base/errors.h"

namespace kolo::gpu {
namespace {

const CudaRuntime& good_runtime() {
  static const CudaRuntime runtime = load_cuda_runtime(cuda_runtime_candidates({FAKE_CUDART_GOOD}));
  return runtime;
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(CudaIpc, AvailableWhereTheRuntimeHasTheIpcCalls) {
  ASSERT_TRUE(good_runtime().status.loaded) << good_runtime().status.reason;
  EXPECT_EQ(cuda_ipc_unavailable(good_runtime()), "");
}

TEST(CudaIpc, WithoutARuntimeOrItsIpcCallsItSaysWhatIsMissing) {
  const CudaRuntime none = load_cuda_runtime({});
  EXPECT_EQ(cuda_ipc_unavailable(none), "CUDA runtime not found: no library was tried");
  CudaRuntime without_ipc = good_runtime();
  without_ipc.functions.ipc_open_mem_handle = nullptr;
  EXPECT_NE(cuda_ipc_unavailable(without_ipc).find("lacks cudaIpcGetMemHandle"), std::string::npos);
  EXPECT_NE(error_of([&] { export_device_memory(without_ipc, 0, 64); }).find("lacks"),
            std::string::npos);
}

TEST(CudaIpc, AFailedCallNamesItselfAndTheDevice) {
  EXPECT_EQ(error_of([] { export_device_memory(good_runtime(), 3, 4096); }),
            "cudaSetDevice(3) for exporting device memory: invalid device ordinal (fake) "
            "(cudaError_t 101)");
  EXPECT_EQ(error_of([] { export_device_memory(good_runtime(), 0, 4096); }),
            "cudaMalloc(4096 bytes) on CUDA device 0: no CUDA-capable device is detected (fake) "
            "(cudaError_t 100)");
  EXPECT_EQ(error_of([] { import_device_memory(good_runtime(), 0, std::string(64, 'h')); }),
            "cudaIpcOpenMemHandle on CUDA device 0: no CUDA-capable device is detected (fake) "
            "(cudaError_t 100)");
  EXPECT_EQ(error_of([] { close_imported_memory(good_runtime(), 0, 0x1000); }),
            "cudaIpcCloseMemHandle: no CUDA-capable device is detected (fake) (cudaError_t 100)");
}

TEST(CudaIpc, AHandleOfTheWrongSizeIsRefusedBeforeAnyCall) {
  try {
    import_device_memory(good_runtime(), 0, "short");
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(), "a CUDA IPC memory handle has 64 bytes, not 5");
  }
}

}  // namespace
}  // namespace kolo::gpu
