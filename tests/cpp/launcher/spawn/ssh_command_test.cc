#include "launcher/spawn/ssh_command.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <functional>

#include "base/errors.h"
#include "launcher/hosts/host_network.h"
#include "launcher/spawn/agent_protocol.h"
#include "launcher/spawn/env_forwarding.h"
#include "launcher/spawn/remote_check.h"

namespace kolo::launcher {
namespace {

using Args = std::vector<std::string>;

// What /bin/sh makes of `command`: each word on its own line. The real test of the quoting.
std::string words_from_shell(const std::string& command) {
  std::string script = "for w in " + command + "; do printf '%s\\n' \"$w\"; done";
  std::string out;
  FILE* pipe = ::popen(("sh -c " + shell_quote(script)).c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  char buffer[256];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

TEST(ShellQuote, EveryWordSurvivesTheRemoteShell) {
  EXPECT_EQ(shell_quote("train.py"), "train.py");
  EXPECT_EQ(shell_quote("--lr=0.1"), "--lr=0.1");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  const std::vector<std::string> words{"print('hi')", "$HOME", "a b",   "`id`",        "x;y",
                                       "*",           "",      "\"q\"", "back\\slash", "new\nline"};
  std::string command;
  std::string expected;
  for (const auto& word : words) {
    command += shell_quote(word) + " ";
    expected += word + "\n";
  }
  EXPECT_EQ(words_from_shell(command), expected);
}

TEST(SshArgv, BatchModePortIdentityThenHostAndCommand) {
  EXPECT_EQ(ssh_argv({}, "node1", "cmd"), (Args{"ssh", "-o", "BatchMode=yes", "node1", "cmd"}));
  EXPECT_EQ(ssh_argv({2222, std::string("/k/id"), 30}, "node1", "cmd"),
            (Args{"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=30", "-p", "2222", "-i",
                  "/k/id", "node1", "cmd"}));
}

TEST(RemoteAgentCommand, QuotedForTheRemoteShell) {
  EXPECT_EQ(remote_agent_command("/opt/kolo/bin/kolorun", "/home/u/my job",
                                 {"python", "-c", "print('x')"}),
            "/opt/kolo/bin/kolorun --remote-agent --cwd '/home/u/my job' -- python -c "
            "'print('\\''x'\\'')'");
  EXPECT_EQ(remote_version_command("/a b/kolorun"), "'/a b/kolorun' --version");
}

TEST(AgentProtocol, StatusLinesRoundTripAndOrdinaryLinesAreNotStatus) {
  for (auto status :
       {ExitStatus::exited_with(0), ExitStatus::exited_with(7), ExitStatus::killed_by(9)}) {
    EXPECT_EQ(parse_agent_status_line(agent_status_line(status)), status);
  }
  EXPECT_FALSE(parse_agent_status_line("kolo-agent-status exited 1\n").has_value());
  EXPECT_FALSE(parse_agent_status_line("Traceback (most recent call last):").has_value());
  EXPECT_FALSE(parse_agent_status_line("\x1ekolo-agent-status vanished 1\n").has_value());
  EXPECT_EQ(agent_signal_request(15), "signal 15\n");
}

TEST(AgentProtocol, EnvironmentAndSignalsThroughAPipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const Environment env{{"KOLO_SECRET", "abc"}, {"ODD", "a=b\nc 'd'"}, {"EMPTY", ""}};
  const std::string text =
      encode_agent_environment(env) + agent_signal_request(2) + agent_signal_request(15);
  ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  AgentInput input(fds[0]);
  EXPECT_EQ(input.read_environment(), env);
  bool closed = false;
  EXPECT_EQ(input.read_signal_requests(closed), (std::vector<int>{2, 15}));
  EXPECT_TRUE(closed);
  ::close(fds[0]);
}

TEST(AgentProtocol, StoppedWatchRequestSetsTheAllowanceBetweenSignals) {
  EXPECT_EQ(agent_stopped_watch_request(std::chrono::milliseconds(5250)), "end-if-stopped 5250\n");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string text = encode_agent_environment({{"A", "1"}}) + agent_signal_request(2) +
                           "end-if-stopped 0\n" + "end-if-stopped x\n" +
                           agent_stopped_watch_request(std::chrono::seconds(5)) +
                           agent_signal_request(15);
  ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  AgentInput input(fds[0]);
  (void)input.read_environment();
  EXPECT_FALSE(input.stopped_watch().has_value());
  bool closed = false;
  // Malformed or zero allowances are ignored; the signals around the request still arrive.
  EXPECT_EQ(input.read_signal_requests(closed), (std::vector<int>{2, 15}));
  ASSERT_TRUE(input.stopped_watch().has_value());
  EXPECT_EQ(*input.stopped_watch(), std::chrono::seconds(5));
  ::close(fds[0]);
}

TEST(AgentProtocol, TruncatedOrForeignInputIsAnError) {
  for (const std::string& text :
       {std::string("hello\n"), encode_agent_environment({{"A", "1"}}).substr(0, 30),
        std::string("kolo-agent-environment 1\nzz\nend\n")}) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fds[1]);
    AgentInput input(fds[0]);
    EXPECT_THROW(input.read_environment(), InvalidArgument) << text;
    ::close(fds[0]);
  }
}

TEST(EnvForwarding, KoloVariablesPathsAndDashXOnly) {
  Environment env{{"KOLO_RANK", "1"},        {"HOROVOD_FUSION_THRESHOLD", "0"},
                  {"PATH", "/venv/bin"},     {"PYTHONPATH", "/src"},
                  {"LD_LIBRARY_PATH", "/l"}, {"PYTHONUNBUFFERED", "1"},
                  {"HOME", "/home/me"},      {"SSH_AUTH_SOCK", "/tmp/agent"},
                  {"WANDB_KEY", "k"},        {"NCCL_DEBUG", "INFO"}};
  apply_env_options({"WANDB_KEY", "OMP_NUM_THREADS=4"}, env);
  EXPECT_EQ(env["OMP_NUM_THREADS"], "4");
  const Environment remote = remote_rank_environment(env, {"WANDB_KEY", "OMP_NUM_THREADS=4"});
  EXPECT_EQ(remote, (Environment{{"KOLO_RANK", "1"},
                                 {"HOROVOD_FUSION_THRESHOLD", "0"},
                                 {"PATH", "/venv/bin"},
                                 {"PYTHONPATH", "/src"},
                                 {"LD_LIBRARY_PATH", "/l"},
                                 {"PYTHONUNBUFFERED", "1"},
                                 {"WANDB_KEY", "k"},
                                 {"OMP_NUM_THREADS", "4"}}));
  Environment plain{{"PATH", "/bin"}};
  try {
    apply_env_options({"MISSING_VAR"}, plain);
    FAIL() << "-x of an unset variable should fail";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("-x MISSING_VAR: MISSING_VAR is not set"),
              std::string::npos);
  }
}

TEST(HostChecks, UnknownHostsAreNamed) {
  auto fake = [](const std::string& host) {
    return host.starts_with("ghost") ? std::string("Name or service not known") : std::string();
  };
  EXPECT_NO_THROW(check_hosts_resolve({"node1", "node2"}, fake));
  try {
    check_hosts_resolve({"node1", "ghost1", "ghost2"}, fake);
    FAIL() << "unresolvable hosts should be refused";
  } catch (const InvalidArgument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("unknown host 'ghost1' (Name or service not known)"), std::string::npos)
        << message;
    EXPECT_NE(message.find("unknown host 'ghost2'"), std::string::npos) << message;
    EXPECT_EQ(message.find("node1"), std::string::npos) << message;
  }
  EXPECT_EQ(resolve_with_getaddrinfo("127.0.0.2"), "");
  EXPECT_EQ(resolve_with_getaddrinfo("localhost"), "");
}

TEST(HostChecks, RendezvousAddressFollowsTheRemoteHosts) {
  EXPECT_EQ(rendezvous_bind_address({}, {}), "127.0.0.1");
  EXPECT_EQ(rendezvous_bind_address({"127.0.0.2"}, {"lo"}), "127.0.0.1");
  const std::string routed = rendezvous_bind_address({"127.0.0.2"}, {});
  EXPECT_TRUE(routed.starts_with("127.")) << routed;
  EXPECT_THROW(rendezvous_bind_address({"127.0.0.2"}, {"no-such-interface0"}), InvalidArgument);
}

TEST(RemoteCheck, VersionAnswersAreJudged) {
  RemoteCheckSettings settings{{}, "/opt/kolorun", "kolorun 0.1.0", 30};
  EXPECT_EQ(judge_version_answer("a", 0, "kolorun 0.1.0\n", "", settings), "");
  EXPECT_NE(judge_version_answer("a", 0, "kolorun 0.0.9\n", "", settings)
                .find("host 'a' runs 'kolorun 0.0.9' but this launcher is 'kolorun 0.1.0'"),
            std::string::npos);
  EXPECT_NE(judge_version_answer("b", 255, "", "Permission denied (publickey).\n", settings)
                .find("host 'b' is not reachable over ssh: Permission denied (publickey)."),
            std::string::npos);
  EXPECT_NE(judge_version_answer("c", 127, "", "sh: 1: /opt/kolorun: not found", settings)
                .find("host 'c' has no kolorun at /opt/kolorun"),
            std::string::npos);
}

}  // namespace
}  // namespace kolo::launcher
