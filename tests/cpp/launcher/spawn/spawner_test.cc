#include "launcher/spawn/spawner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "base/errors.h"
#include "launcher/hosts/local_host.h"
#include "launcher/spawn/local_spawner.h"
#include "placement/affinity.h"
#include "placement/core_share.h"
#include "placement/cpu_list.h"
#include "placement/cpu_topology.h"

namespace kolo::launcher {
namespace {

std::string read_all(const UniqueFd& fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd.fd(), buffer, sizeof(buffer))) > 0) text.append(buffer, n);
  return text;
}

bool is_zombie(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  // "pid (comm) S ...": the state follows the last ')'.
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

SpawnRequest request(std::vector<std::string> argv, Environment env = {}) {
  SpawnRequest request;
  request.slot.host = "localhost";
  request.slot.rank = 1;
  request.slot.local_size = 1;
  request.argv = std::move(argv);
  request.env = std::move(env);
  request.env.emplace("PATH", "/usr/bin:/bin");
  return request;
}

TEST(LocalSpawner, RunsInItsOwnGroupWithEnvironmentAndPipes) {
  // A descriptor kolorun inherited without close-on-exec must not reach the rank.
  int leaked = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaked, 0);
  const std::string script =
      "cat; echo \"foo=$FOO\"; echo to-stderr >&2; "
      "if [ -e /proc/$$/fd/" +
      std::to_string(leaked) + " ]; then echo leaked; fi; sleep 0.3";
  LocalSpawner spawner;
  SpawnedProcess process = spawner.spawn(request({"sh", "-c", script}, {{"FOO", "bar"}}));
  ASSERT_GT(process.pid, 0);
  EXPECT_EQ(::getpgid(process.pid), process.pid);  // its own process group, for group signals
  EXPECT_EQ(read_all(process.stdout_read), "foo=bar\n");  // cat saw /dev/null, not our stdin
  EXPECT_EQ(read_all(process.stderr_read), "to-stderr\n");
  int status = 0;
  ASSERT_EQ(::waitpid(process.pid, &status, 0), process.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::close(leaked);
}

// The rank starts on its share of the launcher's CPUs (local_placement.h), with the variables
// that tell it so; the launcher's own thread keeps its mask.
TEST(LocalSpawner, StartsTheRankOnItsShareOfTheLaunchersCpus) {
  const std::vector<int> mine = placement::thread_affinity();
  if (mine.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  SpawnRequest second =
      request({"sh", "-c",
               "grep Cpus_allowed_list /proc/self/status; echo $KOLO_CPU_SHARE $OMP_NUM_THREADS"});
  second.slot.local_rank = 1;
  second.slot.local_size = 2;
  LocalSpawner spawner;
  SpawnedProcess process = spawner.spawn(second);
  const std::vector<int> share =
      placement::share_for_local_rank(placement::describe_cpus(mine), 1, 2).cpus;
  const std::string cpus = placement::format_cpu_list(share);
  EXPECT_EQ(read_all(process.stdout_read), "Cpus_allowed_list:\t" + cpus + "\n" + cpus + " " +
                                               std::to_string(share.size()) + "\n");
  int status = 0;
  ASSERT_EQ(::waitpid(process.pid, &status, 0), process.pid);
  EXPECT_EQ(placement::thread_affinity(), mine);

  second.env["HOROVOD_BIND_TO"] = "none";
  second.env["OMP_NUM_THREADS"] = "7";
  process = spawner.spawn(second);
  EXPECT_EQ(read_all(process.stdout_read),
            "Cpus_allowed_list:\t" + placement::format_cpu_list(mine) + "\n7\n");
  ASSERT_EQ(::waitpid(process.pid, &status, 0), process.pid);
}

TEST(LocalSpawner, GroupSignalReachesTheRanksChildren) {
  LocalSpawner spawner;
  // The shell starts a background sleep (same group) and reports its pid.
  SpawnedProcess process = spawner.spawn(request({"sh", "-c", "sleep 30 & echo $!; wait"}));
  std::string first_line;
  char c;
  while (::read(process.stdout_read.fd(), &c, 1) == 1 && c != '\n') first_line += c;
  const pid_t child = std::stoi(first_line);
  ASSERT_EQ(::kill(-process.pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(process.pid, &status, 0), process.pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  // The grandchild got the signal too. It was reparented, so it may linger as a zombie until
  // its new parent reaps it: dead or zombie both count.
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = (::kill(child, 0) != 0 && errno == ESRCH) || is_zombie(child);
    if (!gone) ::usleep(10000);
  }
  EXPECT_TRUE(gone) << "pid " << child << " survived the group SIGTERM";
}

TEST(LocalSpawner, MissingProgramIsAnErrorNamingRankAndHost) {
  LocalSpawner spawner;
  try {
    spawner.spawn(request({"/nonexistent/kolo-program"}));
    FAIL() << "spawn should have failed";
  } catch (const SystemError& error) {
    EXPECT_EQ(error.error_code(), ENOENT);
    const std::string message = error.what();
    EXPECT_NE(message.find("rank 1 on host localhost"), std::string::npos) << message;
    EXPECT_NE(message.find("/nonexistent/kolo-program"), std::string::npos) << message;
  }
}

// Records the hosts it was asked to start ranks on, so the selector's choice is visible.
class RecordingSpawner final : public Spawner {
 public:
  SpawnedProcess spawn(const SpawnRequest& request) override {
    hosts.push_back(request.slot.host);
    return {};
  }
  std::vector<std::string> hosts;
};

TEST(SpawnerSelector, LocalHostsSpawnDirectlyOthersOverSsh) {
  auto local = std::make_unique<RecordingSpawner>();
  auto remote = std::make_unique<RecordingSpawner>();
  RecordingSpawner* local_seen = local.get();
  RecordingSpawner* remote_seen = remote.get();
  SpawnerSelector selector("node7", std::move(local), std::move(remote));
  for (const auto& slot : assign_slots(
           {{"localhost", 1}, {"127.0.0.1", 1}, {"node7", 1}, {"node8", 1}, {"127.0.0.2", 1}}, 5)) {
    selector.for_host(slot.host).spawn(SpawnRequest{slot, {"true"}, {}});
  }
  EXPECT_EQ(local_seen->hosts, (std::vector<std::string>{"localhost", "127.0.0.1", "node7"}));
  EXPECT_EQ(remote_seen->hosts, (std::vector<std::string>{"node8", "127.0.0.2"}));
  EXPECT_FALSE(selector.is_remote("NODE7.cluster.example"));
  EXPECT_TRUE(selector.is_remote("node70"));
}

}  // namespace
}  // namespace kolo::launcher
