#include "launcher/supervise/job.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "base/errors.h"
#include "launcher/hosts/host_network.h"
#include "launcher/hosts/host_sources.h"
#include "launcher/hosts/local_host.h"
#include "launcher/spawn/agent_protocol.h"
#include "launcher/spawn/env_forwarding.h"
#include "launcher/spawn/local_placement.h"
#include "launcher/spawn/local_spawner.h"
#include "launcher/spawn/remote_check.h"
#include "launcher/spawn/spawner.h"
#include "launcher/spawn/ssh_command.h"
#include "launcher/spawn/ssh_spawner.h"
#include "launcher/supervise/failure_policy.h"
#include "launcher/supervise/output.h"
#include "launcher/supervise/signals.h"
#include "launcher/supervise/stopped_rank_watch.h"
#include "launcher/supervise/supervisor.h"
#include "rendezvous/keys.h"
#include "rendezvous/tcp_store.h"
#include "transport/shm/job_names.h"
#include "transport/tcp/auth.h"

namespace kolo::launcher {

namespace {

// Shell conventions for a command that could not be run: 127 not found, 126 not executable.
int launch_failure_code(const Error& error) {
  if (const auto* system = dynamic_cast<const SystemError*>(&error)) {
    return system->error_code() == ENOENT ? 127 : 126;
  }
  return 1;
}

void log_plan(const std::vector<SlotAssignment>& plan, const JobSettings& job,
              const LaunchOptions& options, const Logger& logger) {
  logger.info("launching {} rank(s) on {} host(s); rendezvous server at {}:{}", plan.size(),
              hosts_in_plan(plan).size(), job.rendezvous_addr, job.rendezvous_port);
  for (const auto& slot : plan) {
    logger.info("rank {}: host {}, local rank {}/{}, cross rank {}/{}", slot.rank, slot.host,
                slot.local_rank, slot.local_size, slot.cross_rank, slot.cross_size);
  }
  std::string extra;
  for (const auto& [name, value] : job.extra) extra += fmt::format(" {}={}", name, value);
  logger.info(
      "rank environment: KOLO_RANK/SIZE/HOSTNAME, HOROVOD_RANK/SIZE/HOSTNAME/LOCAL_*/"
      "CROSS_*, KOLO_RENDEZVOUS_ADDR={} KOLO_RENDEZVOUS_PORT={} KOLO_SECRET=<hidden> "
      "KOLO_START_TIMEOUT={}{}{} HOROVOD_CONTROLLER=gloo HOROVOD_CPU_OPERATIONS=gloo",
      job.rendezvous_addr, job.rendezvous_port, format_seconds(job.start_timeout_seconds),
      job.log_level ? " KOLO_LOG_LEVEL=" + *job.log_level : "", extra);
  logger.info("command: {}", fmt::join(options.command, " "));
}

}  // namespace

JobSettings job_settings(const LaunchOptions& options, const std::string& address, uint16_t port,
                         const std::string& secret_hex) {
  JobSettings job;
  job.rendezvous_addr = address;
  job.rendezvous_port = port;
  job.secret_hex = secret_hex;
  job.start_timeout_seconds = options.start_timeout_seconds;
  job.log_level = options.log_level;
  job.extra = options.tuning_environment;
  if (!options.network_interfaces.empty()) {
    // The interfaces whose addresses the ranks publish to each other: all of them, under kolo's
    // name and Horovod's.
    const std::string names = fmt::format("{}", fmt::join(options.network_interfaces, ","));
    job.extra.emplace_back("KOLO_IFACE", names);
    job.extra.emplace_back("HOROVOD_GLOO_IFACE", names);
  }
  return job;
}

int run_job(const LaunchOptions& options, const Environment& inherited, const Logger& logger) {
  // First, before the rendezvous server's thread exists (it must inherit the blocked mask).
  SignalWatcher signals;

  const std::string machine = machine_hostname();
  HostSourceOptions sources{options.hosts,
                            options.hostfile,
                            options.hostfile_format,
                            options.slots_per_host,
                            options.num_proc,
                            HostSourceOptions::kDefaultVolcanoPath,
                            machine};
  const LaunchHosts hosts = hosts_for_launch(sources, lookup_in(inherited));
  const auto plan = plan_launch(hosts);
  logger.info("hosts from {}", hosts.source);

  Environment base_env = inherited;
  apply_env_options(options.forwarded_env, base_env);
  char cwd[4096] = {};
  if (::getcwd(cwd, sizeof(cwd) - 1) == nullptr) throw SystemError("getcwd", errno, "kolorun");
  const std::string kolorun = own_executable_path();
  const SshOptions ssh{options.ssh_port, options.ssh_identity_file, std::nullopt};
  SpawnerSelector spawners(machine, std::make_unique<LocalSpawner>(),
                           std::make_unique<SshSpawner>(ssh, kolorun, cwd, options.forwarded_env));

  // Refuse before anything starts: unknown hosts, unreachable ones, another kolo version.
  std::vector<std::string> remote_hosts;
  for (const auto& host : hosts_in_plan(plan)) {
    if (spawners.is_remote(host)) remote_hosts.push_back(host);
  }
  check_hosts_resolve(remote_hosts, resolve_with_getaddrinfo);
  check_remote_hosts(remote_hosts,
                     RemoteCheckSettings{ssh, kolorun, fmt::format("kolorun {}", kKolorunVersion),
                                         options.start_timeout_seconds},
                     logger);

  const auto secret = transport::Secret::generate();
  // Loopback while every rank is local; otherwise an address the remote hosts can reach.
  const std::string address = rendezvous_bind_address(remote_hosts, options.network_interfaces);
  rendezvous::TcpStoreServer server(address, 0, secret, logger);

  const JobSettings job = job_settings(options, address, server.port(), secret.to_hex());
  if (logger.enabled(LogLevel::info)) log_plan(plan, job, options, logger);
  // The header's placement line (launcher/spawn/local_placement.h), for the ranks started here;
  // computed even when not shown, so that a bad --bind-to fails before any rank starts.
  for (const auto& slot : plan) {
    if (spawners.is_remote(slot.host)) continue;
    logger.info("{}", LocalPlacement().describe(slot.local_size,
                                                build_rank_environment(base_env, job, slot)));
    break;
  }

  try {
    std::string planned_hosts;
    for (const auto& slot : plan) planned_hosts += slot.host + "\n";
    rendezvous::TcpStore store({job.rendezvous_addr, job.rendezvous_port}, secret,
                               std::chrono::seconds(2));
    store.set(std::string(rendezvous::kPlannedHostsKey), planned_hosts);
  } catch (const Error& error) {
    logger.debug("could not publish the planned hosts to the rendezvous store: {}", error.what());
  }

  OutputMultiplexer output(OutputOptions{1, 2, options.output_filename, hosts.num_proc,
                                         options.prefix_output_with_timestamp});
  std::vector<RankProcess> ranks;
  std::optional<int> launch_failure;
  for (const auto& slot : plan) {
    try {
      SpawnRequest request{slot, options.command, build_rank_environment(base_env, job, slot)};
      SpawnedProcess process = spawners.for_host(slot.host).spawn(request);
      RankProcess rank{slot, process.pid, std::nullopt, std::move(process.control), nullptr};
      OutputMultiplexer::LineFilter filter;
      if (rank.control.valid()) {
        rank.agent_report = std::make_shared<std::optional<ExitStatus>>();
        filter = [report = rank.agent_report](std::string_view line) {
          auto status = parse_agent_status_line(line);
          if (status) *report = status;
          return status.has_value();
        };
      }
      output.add_rank(slot.rank, std::move(process.stdout_read), std::move(process.stderr_read),
                      std::move(filter));
      ranks.push_back(std::move(rank));
    } catch (const Error& error) {
      logger.error("cannot start rank {} on host {}: {}", slot.rank, slot.host, error.what());
      launch_failure = launch_failure_code(error);
      break;
    }
  }
  if (ranks.empty()) return launch_failure.value_or(1);

  FailurePolicy::Timings timings;
  timings.grace = std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(options.failure_grace_seconds));
  FailurePolicy policy(static_cast<int>(ranks.size()), timings);
  if (launch_failure) policy.on_launch_failure(*launch_failure, Clock::now());
  // The first failure goes into the rendezvous store, where a surviving rank that lost a peer
  // looks for the root cause (otherwise it could only name the neighbour that closed on it).
  auto publish_failure = [&](const std::string& what) {
    try {
      rendezvous::TcpStore store({job.rendezvous_addr, job.rendezvous_port}, secret,
                                 std::chrono::seconds(2));
      store.set(std::string(rendezvous::kFailureKey), what);
    } catch (const Error& error) {
      logger.debug("could not publish the failure to the rendezvous store: {}", error.what());
    }
  };
  Supervisor supervisor(std::move(ranks), policy, output, signals, logger, publish_failure);
  supervisor.watch_for_stopped_ranks(stopped_rank_allowance(
      build_rank_environment(base_env, job, plan.front()), options.failure_grace_seconds));
  const int status = supervisor.run();
  // Ranks unlink their shared-memory objects as soon as the peers mapped them; one killed inside
  // that window leaves its object behind, which only the launcher can still remove (local ranks).
  if (const int removed =
          transport::shm::remove_job_leftovers(transport::shm::job_tag(job.secret_hex))) {
    logger.info("removed {} shared-memory object(s) left in /dev/shm by killed ranks", removed);
  }
  return status;
}

}  // namespace kolo::launcher
