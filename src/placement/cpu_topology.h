// Which physical core each CPU belongs to, from sysfs, so that a share keeps hyperthread
// siblings together.
#pragma once

#include <string>
#include <vector>

#include "placement/core_share.h"

namespace kolo::placement {

// `cpus` with their cores, read from <sysfs_cpu_root>/cpuN/topology/{physical_package_id,core_id}
// (sysfs_cpu_root is /sys/devices/system/cpu on Linux; tests pass a folder of their own). A CPU
// whose files are missing or unreadable counts as a core of its own.
std::vector<Cpu> describe_cpus(const std::vector<int>& cpus,
                               const std::string& sysfs_cpu_root = "/sys/devices/system/cpu");

}  // namespace kolo::placement
