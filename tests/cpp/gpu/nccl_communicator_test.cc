// The NCCL communicator's lifecycle against the scripted fake NCCL (tests/cpp/gpu/fakes): it is
// created non-blocking, waits while NCCL is in progress, and every way out but success aborts it
// and names the rank: NCCL's error, a peer's failure seen by kolo's CPU side, a timeout.
#include "gpu/nccl_communicator.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "base/errors.h"

namespace kolo::gpu {
namespace {

using std::chrono::milliseconds;

const NcclLibrary& fake_nccl() {
  static const NcclLibrary nccl =
      load_nccl({{LibraryCandidate::How::explicit_path, FAKE_NCCL_GOOD, "test"}});
  return nccl;
}

int aborts() {
  (void)fake_nccl();  // loaded first: each test may run alone in its process
  void* handle = ::dlopen(FAKE_NCCL_GOOD, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr);
  return *static_cast<int*>(::dlsym(handle, "fake_nccl_aborts"));
}

ncclUniqueId script(char first, int polls_in_progress, ncclResult_t then) {
  ncclUniqueId id{};
  id.internal[0] = first;
  id.internal[1] = static_cast<char>(polls_in_progress);
  id.internal[2] = static_cast<char>(then);
  return id;
}

TEST(NcclCommunicator, CreatedNonBlockingAndReadyAfterNcclIsDone) {
  ASSERT_TRUE(fake_nccl().status.loaded) << fake_nccl().status.reason;
  int watched = 0;
  auto watch = [&watched]() -> std::optional<PeerFailure> {
    ++watched;
    return std::nullopt;
  };
  const int aborts_before = aborts();
  {
    // The fake refuses a blocking config, so success means kolo asked for a non-blocking one.
    NcclCommunicator comm = NcclCommunicator::create(fake_nccl(), 1, 4, script('-', 3, ncclSuccess),
                                                     watch, milliseconds(5000));
    EXPECT_FALSE(comm.aborted());
    EXPECT_EQ(comm.rank(), 1);
    EXPECT_EQ(watched, 3);  // asked between each poll that found NCCL in progress
    EXPECT_EQ(aborts(), aborts_before);
  }
  EXPECT_EQ(aborts(), aborts_before + 1);  // an open communicator is aborted when dropped
}

TEST(NcclCommunicator, NcclsErrorAbortsAndIsQuoted) {
  const int aborts_before = aborts();
  try {
    (void)NcclCommunicator::create(fake_nccl(), 2, 4, script('-', 1, ncclRemoteError), {},
                                   milliseconds(5000));
    FAIL() << "no error";
  } catch (const PeerError&) {
    FAIL() << "NCCL's own error names no peer";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "rank 2: creating the NCCL communicator (4 ranks): fake NCCL error "
                 "(ncclResult_t 6): fake NCCL last error");
  }
  EXPECT_EQ(aborts(), aborts_before + 1);
}

TEST(NcclCommunicator, APeersFailureAbortsAndNamesThatRank) {
  const int aborts_before = aborts();
  auto watch = []() -> std::optional<PeerFailure> {
    return PeerFailure{3, "rank 3 closed its connection"};
  };
  try {
    (void)NcclCommunicator::create(fake_nccl(), 0, 4, script('-', 100, ncclSuccess), watch,
                                   milliseconds(5000));
    FAIL() << "no error";
  } catch (const PeerError& error) {
    EXPECT_EQ(error.peer_rank(), 3);
    EXPECT_STREQ(error.what(),
                 "rank 0: creating the NCCL communicator: rank 3 closed its connection; the "
                 "NCCL communicator was aborted");
  }
  EXPECT_EQ(aborts(), aborts_before + 1);
}

TEST(NcclCommunicator, StillInProgressAtTheDeadlineAborts) {
  const int aborts_before = aborts();
  try {
    // 100 polls of 0.2 ms each outlast a 0 ms deadline however slow the machine is.
    (void)NcclCommunicator::create(fake_nccl(), 1, 2, script('-', 100, ncclSuccess), {},
                                   milliseconds(0));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "rank 1: creating the NCCL communicator: still in progress after 0 ms; the NCCL "
                 "communicator was aborted");
  }
  EXPECT_EQ(aborts(), aborts_before + 1);
}

TEST(NcclCommunicator, AFailedStartIsReportedWithoutACommunicator) {
  try {
    (void)NcclCommunicator::create(fake_nccl(), 0, 2, script('F', 0, ncclSuccess), {},
                                   milliseconds(5000));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "rank 0: ncclCommInitRankConfig (2 ranks): fake NCCL error (ncclResult_t 4)");
  }
}

TEST(NcclCommunicator, WithoutNcclItSaysWhy) {
  const NcclLibrary none = load_nccl({});
  try {
    (void)NcclCommunicator::create(none, 5, 8, ncclUniqueId{}, {}, milliseconds(10));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()).rfind("rank 5: NCCL not found", 0), 0U) << error.what();
  }
}

TEST(NcclCommunicator, AnAbortedCommunicatorRefusesToWait) {
  NcclCommunicator comm = NcclCommunicator::create(fake_nccl(), 0, 2, script('-', 0, ncclSuccess),
                                                   {}, milliseconds(5000));
  comm.abort();
  EXPECT_TRUE(comm.aborted());
  EXPECT_THROW(comm.wait_ready({}, milliseconds(10), "allreduce"), Error);
}

}  // namespace
}  // namespace kolo::gpu
