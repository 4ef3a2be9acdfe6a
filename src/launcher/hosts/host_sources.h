// Where the hosts of a launch come from, in order: -H, --hostfile (MPI or Volcano format), a
// Slurm allocation in the environment, a Volcano worker file at its standard path, and finally
// horovodrun's default, localhost with -np slots. Also fills in -np when the cluster says it
// (SLURM_NTASKS) and the user did not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "launcher/hosts/hosts.h"

namespace kolo::launcher {

enum class HostfileFormat { mpi, volcano };

struct HostSourceOptions {
  std::optional<std::string> hosts;                // -H
  std::optional<std::string> hostfile;             // --hostfile
  std::optional<HostfileFormat> hostfile_format;   // --hosts-file-format
  std::optional<int> slots_per_host;               // --slots-per-host
  int num_proc = 0;                                // -np; 0 when not given
  std::string volcano_path = kDefaultVolcanoPath;  // auto-detected when it exists
  std::string machine_hostname;

  static constexpr const char* kDefaultVolcanoPath = "/etc/volcano/worker.host";
};

struct LaunchHosts {
  std::vector<HostSlots> hosts;
  std::string source;  // for messages: "-H", "hostfile hosts.txt", "the Slurm allocation ..."
  int num_proc = 0;    // -np, or what the cluster environment says
};

// Throws InvalidArgument for malformed input (naming the source and, in files, the line) and when
// -np is missing without a cluster environment that implies it.
LaunchHosts hosts_for_launch(const HostSourceOptions& options, const EnvLookup& env);

// assign_slots with the source of the hosts named when -np does not fit.
std::vector<SlotAssignment> plan_launch(const LaunchHosts& hosts);

}  // namespace kolo::launcher
