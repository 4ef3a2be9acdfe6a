// The command lines kolorun gives the system ssh client: the user's ~/.ssh/config and agent apply
// as for any ssh, BatchMode=yes turns a password or host-key prompt into an immediate error (a
// prompt nobody can answer would hang the launch), and the remote command is quoted for the
// remote login shell, which joins and re-splits it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kolo::launcher {

struct SshOptions {
  std::optional<int> port;                     // -p
  std::optional<std::string> identity_file;    // -i
  std::optional<int> connect_timeout_seconds;  // -o ConnectTimeout=N
};

// POSIX shell quoting: the text as one word, whatever it contains ('' for the empty string).
std::string shell_quote(std::string_view text);

// ssh [options] HOST REMOTE_COMMAND, the remote command already one shell-quoted string.
std::vector<std::string> ssh_argv(const SshOptions& options, const std::string& host,
                                  const std::string& remote_command);

// `kolorun --remote-agent --cwd DIR -- COMMAND...`, quoted, for the remote shell. `kolorun` is
// the launcher's own path: kolo is expected at the same path on every host (as horovodrun expects
// the same python).
std::string remote_agent_command(const std::string& kolorun, const std::string& cwd,
                                 const std::vector<std::string>& command);

// `kolorun --version`, quoted, for the reachability and version check.
std::string remote_version_command(const std::string& kolorun);

// The path of the running kolorun executable (/proc/self/exe), for the remote command.
std::string own_executable_path();

}  // namespace kolo::launcher
