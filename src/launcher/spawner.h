// Starting one rank's process somewhere. A Spawner turns (command, environment, slot) into a
// running process in its own process group, with its stdout and stderr coming back through pipes
// the launcher reads. LocalSpawner runs it on this machine; an ssh spawner (later) will run ssh
// locally in the same way, so the supervisor and output code never need to know the difference.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/env.h"
#include "launcher/hosts.h"
#include "launcher/unique_fd.h"

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
};

class Spawner {
 public:
  virtual ~Spawner() = default;
  // Throws kolo::Error naming the rank and host when the process cannot be started.
  virtual SpawnedProcess spawn(const SpawnRequest& request) = 0;
};

// What remote spawning will need; parsed now so the command line is complete.
struct RemoteOptions {
  std::optional<int> ssh_port;
  std::optional<std::string> ssh_identity_file;
};

// Picks the spawner for each host of a plan: local hosts get the LocalSpawner, anything else the
// remote one (not available yet: check_hosts explains that before a single rank starts).
class SpawnerSelector {
 public:
  SpawnerSelector(std::string machine_hostname, RemoteOptions remote);
  ~SpawnerSelector();

  // Throws InvalidArgument naming the first host that cannot be launched on.
  void check_hosts(const std::vector<SlotAssignment>& plan) const;
  Spawner& for_host(const std::string& host);

 private:
  std::string machine_hostname_;
  RemoteOptions remote_;
  std::unique_ptr<Spawner> local_;
};

}  // namespace kolo::launcher
