// The CUDA runtime loader against stand-in libraries (tests/cpp/gpu/fakes), with no GPU. Tests
// other than the "already loaded" one search the names they give only, so they hold whatever an
// earlier test of the same process loaded.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"
#include "gpu/cuda_runtime.h"

namespace kolo::gpu {
namespace {

std::vector<LibraryCandidate> search_only(const std::string& name) {
  return {{LibraryCandidate::How::search, name, "the system's dynamic linker search"}};
}

TEST(CudaRuntimeLoader, CandidatesAreTheLoadedSonamesThenTheSearch) {
  const auto candidates = cuda_runtime_candidates({"x.so"});
  ASSERT_EQ(candidates.size(), cuda_runtime_sonames().size() + 1);
  EXPECT_EQ(candidates[0].how, LibraryCandidate::How::already_loaded);
  EXPECT_EQ(candidates[0].name, "libcudart.so.13");
  EXPECT_EQ(candidates.back().how, LibraryCandidate::How::search);
  EXPECT_EQ(candidates.back().name, "x.so");
}

TEST(CudaRuntimeLoader, LoadsAndAsksTheVersion) {
  const CudaRuntime cuda = load_cuda_runtime(search_only(FAKE_CUDART_GOOD));
  ASSERT_TRUE(cuda.status.loaded) << cuda.status.reason;
  EXPECT_EQ(cuda.status.version, 12040);
  EXPECT_EQ(cuda.status.version_string(), "12.4");
  EXPECT_EQ(cuda.status.path, FAKE_CUDART_GOOD);
  int count = -1;
  EXPECT_EQ(cuda.functions.get_device_count(&count), 100);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(cuda.status.describe(), std::string("runtime 12.4 (") + FAKE_CUDART_GOOD +
                                        ", the system's dynamic linker search)");
}

TEST(CudaRuntimeLoader, CheckCudaNamesTheCallAndTheRuntimesText) {
  const CudaRuntime cuda = load_cuda_runtime(search_only(FAKE_CUDART_GOOD));
  ASSERT_TRUE(cuda.status.loaded) << cuda.status.reason;
  EXPECT_NO_THROW(check_cuda(cuda, kCudaSuccess, "cudaEventRecord"));
  try {
    check_cuda(cuda, cuda.functions.event_record(nullptr, nullptr), "recording kolo's event");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "recording kolo's event: no CUDA-capable device is detected (fake) "
                 "(cudaError_t 100)");
  }
}

TEST(CudaRuntimeLoader, AMissingFunctionIsNamed) {
  const CudaRuntime cuda = load_cuda_runtime(search_only(FAKE_CUDART_NO_WAIT));
  EXPECT_FALSE(cuda.status.loaded);
  EXPECT_NE(cuda.status.reason.find("lacks cudaStreamWaitEvent"), std::string::npos)
      << cuda.status.reason;
}

TEST(CudaRuntimeLoader, NotFoundListsWhatWasTried) {
  const CudaRuntime cuda = load_cuda_runtime(search_only("/nonexistent/libcudart.so.12"));
  EXPECT_FALSE(cuda.status.loaded);
  EXPECT_NE(cuda.status.reason.find("CUDA runtime not found"), std::string::npos);
  EXPECT_NE(cuda.status.reason.find("/nonexistent/libcudart.so.12"), std::string::npos);
}

TEST(CudaRuntimeLoader, TheProcesssOwnRuntimeComesFirst) {
  void* torch_runtime = ::dlopen(FAKE_CUDART_GOOD, RTLD_NOW | RTLD_GLOBAL);
  ASSERT_NE(torch_runtime, nullptr) << ::dlerror();
  const CudaRuntime cuda = load_cuda_runtime(cuda_runtime_candidates({FAKE_CUDART_NO_WAIT}));
  ASSERT_TRUE(cuda.status.loaded) << cuda.status.reason;
  EXPECT_EQ(cuda.status.origin, "already loaded by the process");
  EXPECT_EQ(cuda.status.path, FAKE_CUDART_GOOD);
}

}  // namespace
}  // namespace kolo::gpu
