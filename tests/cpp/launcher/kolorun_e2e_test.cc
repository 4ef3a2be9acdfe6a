// Runs the built kolorun binary end to end. The test needs its path in KOLORUN_PATH, e.g.
//   KOLORUN_PATH=build/launcher/kolorun ctest --test-dir build/launcher -R kolorun_e2e
// and skips (saying so) when it is not set.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "rendezvous/tcp_store.h"
#include "transport/tcp/auth.h"

namespace {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  double seconds = 0;
};

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
}

class KolorunEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("KOLORUN_PATH");
    if (path == nullptr || *path == '\0') {
      GTEST_SKIP() << "KOLORUN_PATH is not set: point it at the built kolorun binary to run the "
                      "end-to-end launcher tests";
    }
    kolorun_ = path;
    ASSERT_EQ(::access(kolorun_.c_str(), X_OK), 0)
        << "KOLORUN_PATH=" << kolorun_ << " is not executable";
    char dir[] = "/tmp/kolorun_e2e_XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // `arguments` is a shell fragment (quote as in a shell). `wrapper` goes before kolorun (e.g. a
  // timeout that signals it). Every run is bounded by `timeout 60`.
  RunResult run(const std::string& arguments, const std::string& wrapper = "") {
    const std::string out = dir_ + "/out";
    const std::string err = dir_ + "/err";
    const std::string command = "timeout -s KILL 60 " + wrapper + " '" + kolorun_ + "' " +
                                arguments + " >'" + out + "' 2>'" + err + "' </dev/null";
    const auto start = std::chrono::steady_clock::now();
    const int status = std::system(command.c_str());
    RunResult result;
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = read_file(out);
    result.err = read_file(err);
    return result;
  }

  std::string kolorun_;
  std::string dir_;
};

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << "missing: " << (part) << "\nin:\n" << (text)

TEST_F(KolorunEndToEnd, FailingRanksArePrefixedReportedAndSetTheExitCode) {
  RunResult r = run("-np 2 --failure-grace-seconds 2 sh -c 'echo hi; echo bad >&2; exit 3'");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_CONTAINS(r.out, "[0]<stdout>:hi\n");
  EXPECT_CONTAINS(r.out, "[1]<stdout>:hi\n");
  EXPECT_CONTAINS(r.err, "[0]<stderr>:bad\n");
  EXPECT_CONTAINS(r.err, "[1]<stderr>:bad\n");
  // Both ranks failed on their own within the grace period: both are reported.
  EXPECT_CONTAINS(r.err, "rank 0 (host localhost) exited with code 3");
  EXPECT_CONTAINS(r.err, "rank 1 (host localhost) exited with code 3");
  EXPECT_CONTAINS(r.err, "job failed: the first rank to fail was rank");
  EXPECT_EQ(r.err.find("SIGTERM"), std::string::npos) << "nobody needed terminating:\n" << r.err;
  EXPECT_LT(r.seconds, 10);
}

TEST_F(KolorunEndToEnd, RankKilledBySigkillIsReportedAndOthersAreTerminated) {
  RunResult r =
      run("-np 3 --failure-grace-seconds 0.5 sh -c "
          "'if [ \"$KOLO_RANK\" = 1 ]; then kill -9 $$; fi; echo waiting; sleep 30'");
  EXPECT_EQ(r.exit_code, 128 + 9) << r.err;
  EXPECT_CONTAINS(r.err, "rank 1 (host localhost) was killed by signal SIGKILL (9)");
  EXPECT_CONTAINS(r.err, "sending SIGTERM to the remaining rank(s): 0, 2");
  EXPECT_CONTAINS(r.out, "[0]<stdout>:waiting\n");
  EXPECT_LT(r.seconds, 15) << "the sleeping ranks were not terminated";
}

TEST_F(KolorunEndToEnd, SuccessfulRanksSeeTheirLaunchEnvironment) {
  RunResult r =
      run("-np 3 -H localhost:2,127.0.0.1:1 sh -c 'echo $KOLO_RANK $KOLO_SIZE "
          "$KOLO_HOSTNAME $HOROVOD_RANK $HOROVOD_LOCAL_RANK $HOROVOD_LOCAL_SIZE "
          "$HOROVOD_CROSS_RANK $HOROVOD_CROSS_SIZE $KOLO_RENDEZVOUS_ADDR ${#KOLO_SECRET} "
          "$HOROVOD_CONTROLLER $PYTHONUNBUFFERED $KOLO_START_TIMEOUT'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "[0]<stdout>:0 3 localhost 0 0 2 0 2 127.0.0.1 64 gloo 1 30\n");
  EXPECT_CONTAINS(r.out, "[1]<stdout>:1 3 localhost 1 1 2 0 1 127.0.0.1 64 gloo 1 30\n");
  EXPECT_CONTAINS(r.out, "[2]<stdout>:2 3 127.0.0.1 2 0 1 1 2 127.0.0.1 64 gloo 1 30\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(KolorunEndToEnd, RendezvousPortIsLiveAndFlagsReachTheRanks) {
  RunResult r =
      run("-np 1 --start-timeout 12 --fusion-threshold-mb 2 --log-level info sh -c "
          "'echo $KOLO_START_TIMEOUT $HOROVOD_FUSION_THRESHOLD $KOLO_LOG_LEVEL; "
          "echo port=$KOLO_RENDEZVOUS_PORT'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "[0]<stdout>:12 2097152 INFO\n");
  EXPECT_EQ(r.out.find("port=0\n"), std::string::npos) << r.out;
}

TEST_F(KolorunEndToEnd, OutputFilenameKeepsPerRankLogs) {
  const std::string logs = dir_ + "/logs";
  RunResult r = run("--output-filename '" + logs + "' -np 2 sh -c 'printf \"a\\nb\"; echo e >&2'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "[1]<stdout>:b\n");  // a partial last line is completed
  EXPECT_EQ(read_file(logs + "/rank.0/stdout"), "a\nb\n");
  EXPECT_EQ(read_file(logs + "/rank.1/stderr"), "e\n");
}

TEST_F(KolorunEndToEnd, SigtermToKolorunIsForwardedToTheRanks) {
  RunResult r =
      run("-np 2 sh -c 'trap \"echo got-term; exit 5\" TERM; echo ready; "
          "while true; do sleep 0.1; done'",
          "timeout --preserve-status -s TERM 1");
  EXPECT_EQ(r.exit_code, 128 + 15) << r.err;
  EXPECT_CONTAINS(r.err, "received SIGTERM: forwarded to 2 running rank(s)");
  EXPECT_CONTAINS(r.out, "[0]<stdout>:got-term\n");
  EXPECT_CONTAINS(r.out, "[1]<stdout>:got-term\n");
  EXPECT_LT(r.seconds, 10);
}

// Started by kolorun (below) as each rank of a job: uses the launcher's rendezvous store with the
// job secret from its environment, as a real rank's bootstrap does. Skipped when run directly.
TEST(KolorunRankHelper, UseTheRendezvousStore) {
  const char* role = std::getenv("KOLO_E2E_ROLE");
  if (role == nullptr || std::string(role) != "rank") {
    GTEST_SKIP() << "runs only as a rank started by KolorunEndToEnd.RanksShareTheRendezvousStore";
  }
  using namespace std::chrono_literals;
  const std::string rank = std::getenv("KOLO_RANK");
  const int size = std::stoi(std::getenv("KOLO_SIZE"));
  const kolo::transport::Endpoint server{
      std::getenv("KOLO_RENDEZVOUS_ADDR"),
      static_cast<uint16_t>(std::stoi(std::getenv("KOLO_RENDEZVOUS_PORT")))};
  kolo::rendezvous::TcpStore store(
      server, kolo::transport::Secret::from_hex(std::getenv("KOLO_SECRET")), 10s);
  store.add("e2e/arrived", 1);  // before publishing, so whoever sees every key sees every add
  store.set("e2e/host/" + rank, std::getenv("KOLO_HOSTNAME"));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back("e2e/host/" + std::to_string(r));
  store.wait(keys, 10s);
  std::printf("rendezvous ok: rank %s sees %d ranks, arrived=%lld\n", rank.c_str(), size,
              static_cast<long long>(store.add("e2e/arrived", 0)));
}

TEST_F(KolorunEndToEnd, RanksShareTheRendezvousStore) {
  char self[4096] = {};
  ASSERT_GT(::readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
  RunResult r = run("-np 3 env KOLO_E2E_ROLE=rank '" + std::string(self) +
                    "' --gtest_filter=KolorunRankHelper.UseTheRendezvousStore");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_CONTAINS(r.out, "[" + std::to_string(rank) + "]<stdout>:rendezvous ok: rank " +
                               std::to_string(rank) + " sees 3 ranks, arrived=3\n");
  }
}

TEST_F(KolorunEndToEnd, LaunchErrorsAreClear) {
  // A remote host (127.0.0.2 is one to kolorun; it resolves without DNS) with no ssh client on
  // PATH: refused before any rank starts, naming the host.
  RunResult remote = run("-np 2 -H localhost:1,127.0.0.2:1 true", "env PATH=/nonexistent");
  EXPECT_EQ(remote.exit_code, 2);
  EXPECT_CONTAINS(remote.err, "cannot run ssh for host '127.0.0.2'");

  RunResult too_many = run("-np 3 -H localhost:2 true");
  EXPECT_EQ(too_many.exit_code, 2);
  EXPECT_CONTAINS(too_many.err, "requested more processes (3) than there are available slots (2)");

  RunResult missing = run("-np 2 /nonexistent/kolo-program");
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_CONTAINS(missing.err, "cannot start rank 0 on host localhost");
  EXPECT_CONTAINS(missing.err, "No such file or directory");

  RunResult usage = run("-np 2");
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_CONTAINS(usage.err, "no command to run");
}

}  // namespace
