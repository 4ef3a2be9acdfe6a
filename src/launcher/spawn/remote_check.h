// Before a multi-host job starts: every remote host must answer over ssh and run the same kolo
// version as this launcher, all within --start-timeout. The hosts are asked in parallel; the error
// names each host that failed and why (ssh's own message, kolorun missing, another version, no
// answer in time), so nothing is started on a job that cannot come together.
#pragma once

#include <string>
#include <vector>

#include "base/logger.h"
#include "launcher/spawn/ssh_command.h"

namespace kolo::launcher {

struct RemoteCheckSettings {
  SshOptions ssh;
  std::string kolorun;           // its path on the remote hosts
  std::string expected_version;  // what `kolorun --version` must print there
  double timeout_seconds = 30;
};

// Throws InvalidArgument listing every host that failed the check.
void check_remote_hosts(const std::vector<std::string>& hosts, const RemoteCheckSettings& settings,
                        const Logger& logger);

// The verdict on one host's answer (pure, for tests): empty when fine, else why not.
std::string judge_version_answer(const std::string& host, int exit_code, const std::string& out,
                                 const std::string& err, const RemoteCheckSettings& settings);

}  // namespace kolo::launcher
