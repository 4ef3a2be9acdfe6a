#include "launcher/hosts/host_sources.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>

#include "base/errors.h"
#include "launcher/hosts/volcano.h"
#include "launcher/launcher_test_util.h"

namespace kolo::launcher {
namespace {

using testing::error_of;

using testing::env_of;

// A scratch file removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    int fd = ::mkstemp(path_);
    EXPECT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_); }
  [[nodiscard]] std::string path() const { return path_; }

 private:
  char path_[64] = "/tmp/kolo_host_sources_XXXXXX";
};

HostSourceOptions options_with(int num_proc) {
  HostSourceOptions options;
  options.num_proc = num_proc;
  options.volcano_path = "/nonexistent/volcano/worker.host";
  options.machine_hostname = "launcher-0";
  return options;
}

TEST(SlotsPerHost, EntriesWithoutSlotsGetTheDefault) {
  EXPECT_EQ(parse_hosts("a,b:3,c", 2), (std::vector<HostSlots>{{"a", 2}, {"b", 3}, {"c", 2}}));
  EXPECT_NE(error_of([] { parse_hosts("a,b:3"); }).find("--slots-per-host"), std::string::npos);
  EXPECT_EQ(parse_hostfile("a\nb slots=4\nc:1\n", "hf", 8),
            (std::vector<HostSlots>{{"a", 8}, {"b", 4}, {"c", 1}}));
  const std::string error = error_of([] { parse_hostfile("a slots=1\nb\n", "hf"); });
  EXPECT_NE(error.find("hf:2: missing slot count"), std::string::npos) << error;
}

TEST(ParseHostfile, MalformedLinesGiveTheLineNumber) {
  const char* text = "# cluster\n\nworker-0 slots=2   # two GPUs\nworker-1 slots=two\n";
  std::string error = error_of([&] { parse_hostfile(text, "hosts.txt"); });
  EXPECT_NE(error.find("hosts.txt:4: slot count 'two' is not a number"), std::string::npos)
      << error;
  error = error_of([] { parse_hostfile("a slots=1\n\nb sluts=2\n", "hf"); });
  EXPECT_NE(error.find("hf:3: unexpected 'sluts=2'"), std::string::npos) << error;
  error = error_of([] { parse_hostfile("a slots=1\nb:1\na:2\n", "hf"); });
  EXPECT_NE(error.find("host 'a' is listed twice in hostfile hf"), std::string::npos) << error;
  error = error_of([] { parse_hostfile("-oProxyCommand=x slots=1\n", "hf"); });
  EXPECT_NE(error.find("hf:1: invalid host name"), std::string::npos) << error;
}

TEST(Volcano, LocalhostPlusEachWorker) {
  EXPECT_EQ(parse_volcano_worker_hosts("worker-0\nworker-1\n\n# spare\n", "wh", 8, "launcher-0"),
            (std::vector<HostSlots>{{"localhost", 8}, {"worker-0", 8}, {"worker-1", 8}}));
  // The launcher's own pod in the list is not added a second time.
  EXPECT_EQ(parse_volcano_worker_hosts("launcher-0\nworker-1\n", "wh", 2, "launcher-0"),
            (std::vector<HostSlots>{{"localhost", 2}, {"worker-1", 2}}));
  std::string error = error_of([] { parse_volcano_worker_hosts("w0\nw1\nw0\n", "wh", 1, "l"); });
  EXPECT_NE(error.find("wh:3: worker 'w0' is listed twice"), std::string::npos) << error;
  error = error_of([] { parse_volcano_worker_hosts("w0\nw 1;rm\n", "wh", 1, "l"); });
  EXPECT_EQ(error, "no error");  // first word only, as the recipe's sed would keep the line whole
  error = error_of([] { parse_volcano_worker_hosts("w;0\n", "wh", 1, "l"); });
  EXPECT_NE(error.find("wh:1: invalid host name 'w;0'"), std::string::npos) << error;
}

TEST(HostsForLaunch, FlagsThenSlurmThenVolcanoThenLocalhost) {
  auto options = options_with(3);
  auto hosts = hosts_for_launch(options, env_of({}));
  EXPECT_EQ(hosts.hosts, (std::vector<HostSlots>{{"localhost", 3}}));
  EXPECT_EQ(hosts.num_proc, 3);

  const auto slurm = env_of(
      {{"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_TASKS_PER_NODE", "2,1"}, {"SLURM_NTASKS", "3"}});
  options.hosts = "a:1,b:2";
  EXPECT_EQ(hosts_for_launch(options, slurm).hosts, (std::vector<HostSlots>{{"a", 1}, {"b", 2}}));

  // Inside Slurm, no -H and no -np: the allocation decides both.
  auto bare = options_with(0);
  hosts = hosts_for_launch(bare, slurm);
  EXPECT_EQ(hosts.hosts, (std::vector<HostSlots>{{"n1", 2}, {"n2", 1}}));
  EXPECT_EQ(hosts.num_proc, 3);
  EXPECT_NE(hosts.source.find("Slurm"), std::string::npos);

  TempFile workers("w1\nw2\n");
  bare.volcano_path = workers.path();
  bare.slots_per_host = 4;
  bare.num_proc = 12;
  hosts = hosts_for_launch(bare, env_of({}));  // found at its standard path, no flag needed
  EXPECT_EQ(hosts.hosts, (std::vector<HostSlots>{{"localhost", 4}, {"w1", 4}, {"w2", 4}}));

  auto volcano_flag = options_with(2);
  volcano_flag.hostfile = workers.path();
  volcano_flag.hostfile_format = HostfileFormat::volcano;
  EXPECT_EQ(hosts_for_launch(volcano_flag, env_of({})).hosts,
            (std::vector<HostSlots>{{"localhost", 1}, {"w1", 1}, {"w2", 1}}));

  TempFile mpi("x slots=2\n");
  auto hostfile = options_with(2);
  hostfile.hostfile = mpi.path();
  EXPECT_EQ(hosts_for_launch(hostfile, env_of({})).hosts, (std::vector<HostSlots>{{"x", 2}}));
}

TEST(HostsForLaunch, NpIsRequiredOutsideSlurmAndMustFit) {
  EXPECT_NE(error_of([] {
              hosts_for_launch(options_with(0), env_of({}));
            }).find("number of processes is required"),
            std::string::npos);
  auto options = options_with(5);
  options.hosts = "a:2,b:2";
  const std::string error = error_of([&] { plan_launch(hosts_for_launch(options, env_of({}))); });
  EXPECT_NE(error.find("requested more processes (5) than there are available slots (4) in -H "
                       "a:2,b:2"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace kolo::launcher
