// kolorun's hidden remote-agent mode, what ssh runs on a remote host for one rank:
//   kolorun --remote-agent --cwd DIR -- COMMAND [ARGS...]
// It reads the rank's environment from stdin (agent_protocol.h), enters DIR, starts COMMAND in a
// process group of its own with stdout/stderr going straight back through ssh, forwards signals
// (its own SIGINT/SIGTERM/SIGHUP, and "signal N" requests from the launcher), kills the rank when
// stdin reaches end-of-file (the launcher or the ssh session is gone: no orphan ranks), and ends
// with a status line saying exactly how the rank ended (exit code or signal).
#pragma once

#include <string>
#include <vector>

namespace kolo::launcher {

inline constexpr const char* kRemoteAgentFlag = "--remote-agent";

// `args` are kolorun's arguments after --remote-agent. Returns the agent's exit code: the rank's
// own code, 128 + signal when it was killed (the status line is the precise account).
int run_remote_agent(const std::vector<std::string>& args);

}  // namespace kolo::launcher
