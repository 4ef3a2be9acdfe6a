#include "launcher/spawn/ssh_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>

#include "base/errors.h"

namespace kolo::launcher {

std::string shell_quote(std::string_view text) {
  if (!text.empty() && text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                              "0123456789_-./=:,+@%") == std::string_view::npos) {
    return std::string(text);  // nothing a shell would interpret: readable as it is
  }
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";  // close, an escaped quote, reopen
    } else {
      quoted += c;
    }
  }
  quoted += "'";
  return quoted;
}

std::vector<std::string> ssh_argv(const SshOptions& options, const std::string& host,
                                  const std::string& remote_command) {
  std::vector<std::string> argv{"ssh", "-o", "BatchMode=yes"};
  if (options.connect_timeout_seconds) {
    argv.push_back("-o");
    argv.push_back(fmt::format("ConnectTimeout={}", *options.connect_timeout_seconds));
  }
  if (options.port) {
    argv.push_back("-p");
    argv.push_back(std::to_string(*options.port));
  }
  if (options.identity_file) {
    argv.push_back("-i");
    argv.push_back(*options.identity_file);
  }
  argv.push_back(host);
  argv.push_back(remote_command);
  return argv;
}

std::string remote_agent_command(const std::string& kolorun, const std::string& cwd,
                                 const std::vector<std::string>& command) {
  std::string text =
      fmt::format("{} --remote-agent --cwd {} --", shell_quote(kolorun), shell_quote(cwd));
  for (const auto& word : command) text += " " + shell_quote(word);
  return text;
}

std::string remote_version_command(const std::string& kolorun) {
  return shell_quote(kolorun) + " --version";
}

std::string own_executable_path() {
  std::string path(4096, '\0');
  ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size());
  if (n <= 0 || static_cast<size_t>(n) >= path.size()) {
    throw SystemError("readlink", errno, "/proc/self/exe (kolorun's own path for remote hosts)");
  }
  path.resize(static_cast<size_t>(n));
  return path;
}

}  // namespace kolo::launcher
