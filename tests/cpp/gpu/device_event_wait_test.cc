// The background thread's wait on the asynchronous host path, against the stand-in runtime
// (tests/cpp/gpu/fakes/fake_cudart.cc), with no GPU.
#include "gpu/device_event_wait.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "base/errors.h"

namespace kolo::gpu {
namespace {

const CudaRuntime& fake_runtime() {
  static const CudaRuntime runtime = load_cuda_runtime(cuda_runtime_candidates({FAKE_CUDART_GOOD}));
  return runtime;
}

const std::uintptr_t* synchronized_record() {
  void* handle = ::dlopen(FAKE_CUDART_GOOD, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr);
  return static_cast<const std::uintptr_t*>(::dlsym(handle, "fake_cudart_synchronized"));
}

TEST(DeviceEventWait, SetsTheEventsDeviceThenWaitsForIt) {
  ASSERT_TRUE(fake_runtime().status.loaded) << fake_runtime().status.reason;
  const std::uintptr_t event = 0x1234;
  wait_for_device_event(fake_runtime(), event, 0);
  const std::uintptr_t* record = synchronized_record();
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record[0], event);
  EXPECT_EQ(record[1], 0U);  // the device was set before the wait
}

TEST(DeviceEventWait, AFailedSetDeviceIsNamedAndNothingIsWaitedFor) {
  ASSERT_TRUE(fake_runtime().status.loaded) << fake_runtime().status.reason;
  try {
    wait_for_device_event(fake_runtime(), 0x99, 3);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "cudaSetDevice on CUDA device 3: invalid device ordinal (fake) (cudaError_t 101)");
  }
  EXPECT_NE(synchronized_record()[0], 0x99U);
}

TEST(DeviceEventWait, WithoutARuntimeItSaysWhy) {
  const CudaRuntime none = load_cuda_runtime({});
  try {
    wait_for_device_event(none, 0x1, 0);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "waiting for CUDA device 0's copy: CUDA runtime not found: no "
                 "library was tried");
  }
}

}  // namespace
}  // namespace kolo::gpu
