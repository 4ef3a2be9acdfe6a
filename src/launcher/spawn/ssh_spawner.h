// Starts a rank on another host: runs `ssh HOST kolorun --remote-agent --cwd DIR -- COMMAND...`
// locally (in its own process group, output through pipes like a local rank) and writes the
// rank's forwarded environment into ssh's stdin, whose write end stays with the launcher as the
// rank's control channel (agent_protocol.h).
#pragma once

#include <string>
#include <vector>

#include "launcher/spawn/spawner.h"
#include "launcher/spawn/ssh_command.h"

namespace kolo::launcher {

class SshSpawner final : public Spawner {
 public:
  // `kolorun` is the path of kolorun on the remote hosts; `cwd` the ranks' working directory;
  // `env_options` the -x entries (which variables to forward).
  SshSpawner(SshOptions ssh, std::string kolorun, std::string cwd,
             std::vector<std::string> env_options);

  SpawnedProcess spawn(const SpawnRequest& request) override;

 private:
  SshOptions ssh_;
  std::string kolorun_;
  std::string cwd_;
  std::vector<std::string> env_options_;
};

}  // namespace kolo::launcher
