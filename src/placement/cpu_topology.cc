#include "placement/cpu_topology.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <optional>
#include <utility>

namespace kolo::placement {

namespace {

std::optional<int> read_number(const std::string& path) {
  std::ifstream file(path);
  int value = 0;
  if (file >> value) return value;
  return std::nullopt;
}

}  // namespace

std::vector<Cpu> describe_cpus(const std::vector<int>& cpus, const std::string& sysfs_cpu_root) {
  // Core numbers repeat across packages: a core is the pair, numbered here in order of first use.
  std::map<std::pair<int, int>, int> core_numbers;
  std::vector<Cpu> described;
  int next_unknown = -1;  // CPUs without topology files: negative numbers, one core each
  for (int cpu : cpus) {
    const std::string topology = fmt::format("{}/cpu{}/topology/", sysfs_cpu_root, cpu);
    const auto package = read_number(topology + "physical_package_id");
    const auto core = read_number(topology + "core_id");
    if (!package || !core) {
      described.push_back(Cpu{cpu, next_unknown--});
      continue;
    }
    auto [found, inserted] =
        core_numbers.emplace(std::pair{*package, *core}, static_cast<int>(core_numbers.size()));
    described.push_back(Cpu{cpu, found->second});
  }
  return described;
}

}  // namespace kolo::placement
