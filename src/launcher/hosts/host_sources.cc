#include "launcher/hosts/host_sources.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "base/errors.h"
#include "launcher/hosts/slurm.h"
#include "launcher/hosts/volcano.h"

namespace kolo::launcher {

namespace {

int total_slots(const std::vector<HostSlots>& hosts) {
  long total = 0;
  for (const auto& host : hosts) total += host.slots;
  return static_cast<int>(std::min<long>(total, 1 << 30));
}

LaunchHosts from_volcano(const std::string& path, const HostSourceOptions& options) {
  LaunchHosts result;
  const int slots = options.slots_per_host.value_or(1);
  result.hosts = parse_volcano_worker_hosts(read_text_file(path, "Volcano worker file"), path,
                                            slots, options.machine_hostname);
  result.source = fmt::format(
      "Volcano worker file {} (localhost and each worker with {} slot(s); "
      "set --slots-per-host)",
      path, slots);
  return result;
}

std::optional<LaunchHosts> from_slurm(const HostSourceOptions& options, const EnvLookup& env) {
  auto allocation = slurm_allocation(env, options.slots_per_host);
  if (!allocation) return std::nullopt;
  LaunchHosts result;
  for (const auto& node : allocation->nodes) result.hosts.push_back({node.name, node.tasks});
  result.source =
      fmt::format("the Slurm allocation (SLURM_JOB_NODELIST={})",
                  env("SLURM_JOB_NODELIST").value_or(env("SLURM_NODELIST").value_or("")));
  // Inside an allocation, `kolorun python train.py` runs as many ranks as Slurm granted tasks.
  result.num_proc = allocation->ntasks.value_or(total_slots(result.hosts));
  return result;
}

}  // namespace

LaunchHosts hosts_for_launch(const HostSourceOptions& options, const EnvLookup& env) {
  // --hosts-file-format volcano without --hostfile: the standard worker file, before Slurm.
  const bool volcano_asked = options.hostfile_format == HostfileFormat::volcano;
  LaunchHosts result;
  if (options.hosts) {
    result.hosts = parse_hosts(*options.hosts, options.slots_per_host);
    result.source = "-H " + *options.hosts;
  } else if (options.hostfile &&
             options.hostfile_format.value_or(HostfileFormat::mpi) == HostfileFormat::volcano) {
    result = from_volcano(*options.hostfile, options);
  } else if (options.hostfile) {
    result.hosts = parse_hostfile(read_text_file(*options.hostfile, "hostfile"), *options.hostfile,
                                  options.slots_per_host);
    result.source = "hostfile " + *options.hostfile;
  } else if (auto slurm = volcano_asked ? std::nullopt : from_slurm(options, env)) {
    result = std::move(*slurm);
  } else if (volcano_asked || ::access(options.volcano_path.c_str(), F_OK) == 0) {
    result = from_volcano(options.volcano_path, options);  // the flag, or found at its place
  } else {
    if (options.num_proc < 1) {
      throw InvalidArgument("the number of processes is required: kolorun -np N COMMAND...");
    }
    // horovodrun's default: every rank on this machine.
    result.hosts = {HostSlots{"localhost", options.num_proc}};
    result.source = "the default localhost";
  }
  if (options.num_proc > 0) result.num_proc = options.num_proc;
  if (result.num_proc < 1) {
    throw InvalidArgument(fmt::format(
        "the number of processes is required with hosts from {}: kolorun -np N COMMAND...",
        result.source));
  }
  return result;
}

std::vector<SlotAssignment> plan_launch(const LaunchHosts& hosts) {
  const int total = total_slots(hosts.hosts);
  if (hosts.num_proc > total) {
    throw InvalidArgument(
        fmt::format("requested more processes ({}) than there are available slots ({}) in {}",
                    hosts.num_proc, total, hosts.source));
  }
  return assign_slots(hosts.hosts, hosts.num_proc);
}

}  // namespace kolo::launcher
