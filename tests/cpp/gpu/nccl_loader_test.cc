// The NCCL loader against stand-in libraries (tests/cpp/gpu/fakes): every branch of the search
// and every message, with no GPU and no NCCL on the machine. ctest runs each test in its own
// process, so "already loaded by the process" sees only what the test itself loaded.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "gpu/nccl_library.h"

namespace kolo::gpu {
namespace {

using How = LibraryCandidate::How;

// Candidates without the "already loaded" step: what the test names is what is tried.
std::vector<LibraryCandidate> without_already_loaded(std::vector<LibraryCandidate> candidates) {
  EXPECT_EQ(candidates.front().how, How::already_loaded);
  candidates.erase(candidates.begin());
  return candidates;
}

TEST(NcclCandidates, AlreadyLoadedThenTheSystemWithoutSettings) {
  const std::map<std::string, std::string> env;
  const auto candidates = nccl_candidates(lookup_in(env));
  ASSERT_EQ(candidates.size(), 2U);
  EXPECT_EQ(candidates[0].how, How::already_loaded);
  EXPECT_EQ(candidates[0].name, "libnccl.so.2");
  EXPECT_EQ(candidates[1].how, How::search);
  EXPECT_EQ(candidates[1].name, "libnccl.so.2");
}

TEST(NcclCandidates, HorovodNcclHomeMeansItsLibFolder) {
  const std::map<std::string, std::string> env{{"HOROVOD_NCCL_HOME", "/opt/nccl"}};
  const auto candidates = nccl_candidates(lookup_in(env));
  ASSERT_EQ(candidates.size(), 3U);
  EXPECT_EQ(candidates[1].how, How::explicit_path);
  EXPECT_EQ(candidates[1].name, "/opt/nccl/lib/libnccl.so.2");
  EXPECT_EQ(candidates[1].origin, "HOROVOD_NCCL_HOME");
}

TEST(NcclCandidates, KoloNcclLibraryWinsOverTheFolders) {
  const std::map<std::string, std::string> env{{"HOROVOD_NCCL_HOME", "/opt/nccl"},
                                               {"HOROVOD_NCCL_LIB", "/opt/other"},
                                               {"KOLO_NCCL_LIBRARY", "/x/libnccl.so.2.21.5"}};
  const auto candidates = nccl_candidates(lookup_in(env));
  ASSERT_EQ(candidates.size(), 3U);
  EXPECT_EQ(candidates[1].name, "/x/libnccl.so.2.21.5");
  EXPECT_EQ(candidates[1].origin, "KOLO_NCCL_LIBRARY");
}

TEST(NcclCandidates, HorovodNcclLibIsAFolder) {
  const std::map<std::string, std::string> env{{"HOROVOD_NCCL_LIB", "/opt/other"}};
  EXPECT_EQ(nccl_candidates(lookup_in(env))[1].name, "/opt/other/libnccl.so.2");
}

TEST(NcclLoader, LoadsTheNamedLibraryAndReportsVersionPathAndOrigin) {
  const std::map<std::string, std::string> env{{"KOLO_NCCL_LIBRARY", FAKE_NCCL_GOOD}};
  const NcclLibrary nccl = load_nccl(without_already_loaded(nccl_candidates(lookup_in(env))));
  ASSERT_TRUE(nccl.status.loaded) << nccl.status.reason;
  EXPECT_EQ(nccl.status.version, 22105);
  EXPECT_EQ(nccl.status.version_string(), "2.21.5");
  EXPECT_EQ(nccl.status.path, FAKE_NCCL_GOOD);
  EXPECT_EQ(nccl.status.origin, "KOLO_NCCL_LIBRARY");
  EXPECT_EQ(nccl.status.describe(),
            std::string("2.21.5 (") + FAKE_NCCL_GOOD + ", KOLO_NCCL_LIBRARY)");
  // The table points into the library: the fake's calls answer as the fake does.
  EXPECT_EQ(nccl.functions.all_reduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, nullptr, nullptr),
            ncclInternalError);
  EXPECT_EQ(nccl_error_text(nccl, ncclInternalError), "fake NCCL error (ncclResult_t 3)");
}

TEST(NcclLoader, ANamedLibraryThatFailsIsReportedNotReplaced) {
  const std::map<std::string, std::string> env{{"KOLO_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}};
  // The system's search would find the good fake; the named library's failure must win.
  const NcclLibrary nccl =
      load_nccl(without_already_loaded(nccl_candidates(lookup_in(env), FAKE_NCCL_GOOD)));
  EXPECT_FALSE(nccl.status.loaded);
  EXPECT_NE(nccl.status.reason.find("NCCL not found"), std::string::npos) << nccl.status.reason;
  EXPECT_NE(nccl.status.reason.find("/nonexistent/libnccl.so.2 (KOLO_NCCL_LIBRARY)"),
            std::string::npos)
      << nccl.status.reason;
  EXPECT_EQ(nccl.status.reason.find(FAKE_NCCL_GOOD), std::string::npos) << nccl.status.reason;
}

TEST(NcclLoader, TheSystemSearchIsTheLastResort) {
  const std::map<std::string, std::string> env;
  const NcclLibrary nccl =
      load_nccl(without_already_loaded(nccl_candidates(lookup_in(env), FAKE_NCCL_GOOD)));
  ASSERT_TRUE(nccl.status.loaded) << nccl.status.reason;
  EXPECT_EQ(nccl.status.origin, "the system's dynamic linker search");
}

TEST(NcclLoader, NothingFoundSaysWhereItLookedAndWhatToDo) {
  const std::map<std::string, std::string> env;
  const NcclLibrary nccl = load_nccl(
      without_already_loaded(nccl_candidates(lookup_in(env), "/nonexistent/system/libnccl.so.2")));
  EXPECT_FALSE(nccl.status.loaded);
  EXPECT_EQ(nccl.status.version, 0);
  EXPECT_NE(nccl.status.reason.find("/nonexistent/system/libnccl.so.2"), std::string::npos);
  EXPECT_NE(nccl.status.reason.find("KOLO_NCCL_LIBRARY"), std::string::npos);
  EXPECT_EQ(nccl.status.describe(), nccl.status.reason);
}

TEST(NcclLoader, TooOldIsReportedWithBothVersions) {
  const std::map<std::string, std::string> env;
  const NcclLibrary nccl =
      load_nccl(without_already_loaded(nccl_candidates(lookup_in(env), FAKE_NCCL_OLD)));
  EXPECT_FALSE(nccl.status.loaded);
  EXPECT_EQ(nccl.status.version, 21703);
  EXPECT_NE(nccl.status.reason.find("NCCL 2.17.3"), std::string::npos) << nccl.status.reason;
  EXPECT_NE(nccl.status.reason.find("too old"), std::string::npos) << nccl.status.reason;
  EXPECT_NE(nccl.status.reason.find("2.18.0 or newer"), std::string::npos) << nccl.status.reason;
}

TEST(NcclLoader, AMissingFunctionIsNamed) {
  const std::map<std::string, std::string> env{{"KOLO_NCCL_LIBRARY", FAKE_NCCL_NO_SPLIT}};
  const NcclLibrary nccl = load_nccl(without_already_loaded(nccl_candidates(lookup_in(env))));
  EXPECT_FALSE(nccl.status.loaded);
  EXPECT_NE(nccl.status.reason.find("lacks ncclCommSplit"), std::string::npos)
      << nccl.status.reason;
  EXPECT_EQ(nccl.status.reason.find("ncclAllReduce"), std::string::npos) << nccl.status.reason;
}

TEST(NcclLoader, NotALibraryAtAll) {
  // A file that dlopen refuses (this test's own source is not an ELF object).
  const std::map<std::string, std::string> env{{"KOLO_NCCL_LIBRARY", __FILE__}};
  const NcclLibrary nccl = load_nccl(without_already_loaded(nccl_candidates(lookup_in(env))));
  EXPECT_FALSE(nccl.status.loaded);
  EXPECT_NE(nccl.status.reason.find(std::string(__FILE__) + " (KOLO_NCCL_LIBRARY)"),
            std::string::npos)
      << nccl.status.reason;
}

TEST(NcclLoader, TheProcesssOwnNcclComesFirst) {
  // What torch does: its CUDA build has loaded a libnccl.so.2 before kolo looks.
  void* torch_nccl = ::dlopen(FAKE_NCCL_GOOD, RTLD_NOW | RTLD_GLOBAL);
  ASSERT_NE(torch_nccl, nullptr) << ::dlerror();
  // A setting naming another NCCL does not load a second copy into the process.
  const std::map<std::string, std::string> env{{"KOLO_NCCL_LIBRARY", FAKE_NCCL_OLD}};
  const NcclLibrary nccl = load_nccl(nccl_candidates(lookup_in(env)));
  ASSERT_TRUE(nccl.status.loaded) << nccl.status.reason;
  EXPECT_EQ(nccl.status.origin, "already loaded by the process");
  EXPECT_EQ(nccl.status.path, FAKE_NCCL_GOOD);
  EXPECT_EQ(nccl.status.version, 22105);
}

TEST(NcclLoader, WithoutAnyNcclTheProcessWideAnswerIsAReason) {
  // This test process loaded no NCCL, and the build machine has none on the linker's path
  // (checked first: a machine that does have one is not this test's case).
  if (void* system = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL); system != nullptr) {
    GTEST_SKIP() << "this machine has a system libnccl.so.2";
  }
  const NcclLibrary& nccl = nccl_library();
  EXPECT_FALSE(nccl.status.loaded);
  EXPECT_NE(nccl.status.reason.find("NCCL not found"), std::string::npos) << nccl.status.reason;
  EXPECT_EQ(&nccl, &nccl_library());  // looked for once
}

}  // namespace
}  // namespace kolo::gpu
