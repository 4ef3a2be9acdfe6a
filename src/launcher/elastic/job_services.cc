#include "launcher/elastic/job_services.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>

#include "base/errors.h"
#include "launcher/hosts/host_network.h"
#include "launcher/hosts/local_host.h"
#include "launcher/spawn/local_spawner.h"
#include "launcher/spawn/ssh_command.h"
#include "launcher/spawn/ssh_spawner.h"
#include "launcher/supervise/job.h"
#include "transport/tcp/auth.h"

namespace kolo::launcher {

ElasticJobServices start_elastic_job_services(const LaunchOptions& options,
                                              const std::vector<HostSlots>& pool,
                                              const Logger& logger) {
  ElasticJobServices services;
  char cwd[4096] = {};
  if (::getcwd(cwd, sizeof(cwd) - 1) == nullptr) throw SystemError("getcwd", errno, "kolorun");
  const SshOptions ssh{options.ssh_port, options.ssh_identity_file, std::nullopt};
  services.spawners = std::make_unique<SpawnerSelector>(
      machine_hostname(), std::make_unique<LocalSpawner>(),
      std::make_unique<SshSpawner>(ssh, own_executable_path(), cwd, options.forwarded_env));
  std::vector<std::string> remote_hosts;
  for (const auto& host : pool) {
    if (services.spawners->is_remote(host.host)) remote_hosts.push_back(host.host);
  }
  // With a discovery script remote hosts may only appear later: then listen where they can reach.
  if (remote_hosts.empty() && options.discovery_script && !options.network_interfaces.empty()) {
    remote_hosts.emplace_back("");
  }
  const auto secret = transport::Secret::generate();
  const std::string address = rendezvous_bind_address(remote_hosts, options.network_interfaces);
  services.server = std::make_unique<rendezvous::TcpStoreServer>(address, 0, secret, logger);
  services.job = job_settings(options, address, services.server->port(), secret.to_hex());
  services.store = std::make_unique<rendezvous::TcpStore>(
      transport::Endpoint{services.job.rendezvous_addr, services.job.rendezvous_port}, secret,
      std::chrono::seconds(5));
  services.output = std::make_unique<OutputMultiplexer>(
      OutputOptions{1, 2, options.output_filename, std::max({options.num_proc, options.max_np, 1}),
                    options.prefix_output_with_timestamp});
  return services;
}

}  // namespace kolo::launcher
