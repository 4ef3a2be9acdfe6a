// Starting one rank's process somewhere. A Spawner turns (command, environment, slot) into a
// running process in its own process group, with its stdout and stderr coming back through pipes
// the launcher reads. LocalSpawner runs it on this machine; SshSpawner runs ssh locally in the
// same way (the rank runs under kolorun's remote agent on the other end), so the supervisor and
// output code only differ in how they signal the rank: through `control` when it is set.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "launcher/hosts/hosts.h"
#include "launcher/spawn/pipe.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

struct SpawnRequest {
  SlotAssignment slot;
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  Environment env;
};

struct SpawnedProcess {
  pid_t pid = -1;  // also the process group id: signal -pid to reach the rank and its children
  UniqueFd stdout_read;
  UniqueFd stderr_read;
  // Remote ranks: the write end of the agent's stdin (agent_protocol.h). Signals are asked for
  // through it; closing it (or kolorun's death) makes the agent kill the rank.
  UniqueFd control;
};

class Spawner {
 public:
  virtual ~Spawner() = default;
  // Throws kolo::Error naming the rank and host when the process cannot be started.
  virtual SpawnedProcess spawn(const SpawnRequest& request) = 0;
};

// Picks the spawner for each host: local hosts get `local`, anything else `remote`.
class SpawnerSelector {
 public:
  SpawnerSelector(std::string machine_hostname, std::unique_ptr<Spawner> local,
                  std::unique_ptr<Spawner> remote);
  ~SpawnerSelector();

  [[nodiscard]] bool is_remote(const std::string& host) const;
  Spawner& for_host(const std::string& host);

 private:
  std::string machine_hostname_;
  std::unique_ptr<Spawner> local_;
  std::unique_ptr<Spawner> remote_;
};

}  // namespace kolo::launcher
