#include "launcher/spawn/ssh_spawner.h"

#include <fmt/format.h>

#include "launcher/spawn/agent_protocol.h"
#include "launcher/spawn/env_forwarding.h"
#include "launcher/spawn/process_spawn.h"

namespace kolo::launcher {

SshSpawner::SshSpawner(SshOptions ssh, std::string kolorun, std::string cwd,
                       std::vector<std::string> env_options)
    : ssh_(std::move(ssh)),
      kolorun_(std::move(kolorun)),
      cwd_(std::move(cwd)),
      env_options_(std::move(env_options)) {}

SpawnedProcess SshSpawner::spawn(const SpawnRequest& request) {
  const std::string who = fmt::format("rank {} on host {}", request.slot.rank, request.slot.host);
  Pipe input = Pipe::create("stdin pipe for an ssh session");
  // ssh itself runs with the launcher's environment (its agent socket, its config); the rank's
  // environment travels through stdin.
  SpawnedProcess process = start_process(ProcessSpec{
      ssh_argv(ssh_, request.slot.host, remote_agent_command(kolorun_, cwd_, request.argv)),
      current_environment(), who, input.read.fd(), true});
  input.read.reset();
  const std::string block =
      encode_agent_environment(remote_rank_environment(request.env, env_options_));
  // If ssh already failed, this write fails (EPIPE; SIGPIPE is ignored): ssh's exit status and
  // its stderr then tell the user what went wrong, through the normal failure report.
  (void)write_fully(input.write.fd(), block.data(), block.size());
  process.control = std::move(input.write);
  return process;
}

}  // namespace kolo::launcher
