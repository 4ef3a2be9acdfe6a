#include "placement/core_share.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/errors.h"

namespace kolo::placement {

namespace {

// The CPUs grouped by physical core, cores in the order of their lowest CPU, CPUs sorted within.
std::vector<std::vector<int>> group_by_core(const std::vector<Cpu>& allowed) {
  std::map<int, std::vector<int>> by_core;
  for (const Cpu& cpu : allowed) by_core[cpu.core].push_back(cpu.id);
  std::vector<std::vector<int>> cores;
  for (auto& [core, cpus] : by_core) {
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    cores.push_back(std::move(cpus));
  }
  std::sort(cores.begin(), cores.end(),
            [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return cores;
}

// Items [first, first + count) of `units` split into `parts` consecutive blocks whose sizes
// differ by at most one (the larger ones first): where block `part` begins and ends.
std::pair<size_t, size_t> block(size_t units, size_t parts, size_t part) {
  const size_t base = units / parts;
  const size_t larger = units % parts;
  const size_t begin = part * base + std::min(part, larger);
  return {begin, begin + base + (part < larger ? 1 : 0)};
}

}  // namespace

Share share_for_local_rank(const std::vector<Cpu>& allowed, int local_rank, int local_size) {
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size) {
    throw InvalidArgument(
        fmt::format("placement: local rank {} of {} local ranks is not a place on this host",
                    local_rank, local_size));
  }
  if (allowed.empty()) {
    throw InvalidArgument("placement: the job may use no CPU (empty affinity mask)");
  }
  const std::vector<std::vector<int>> cores = group_by_core(allowed);
  std::vector<int> by_core_order;  // siblings next to each other
  for (const auto& core : cores)
    by_core_order.insert(by_core_order.end(), core.begin(), core.end());
  const auto ranks = static_cast<size_t>(local_size);
  const auto rank = static_cast<size_t>(local_rank);

  Share share;
  if (ranks <= cores.size()) {
    const auto [begin, end] = block(cores.size(), ranks, rank);
    for (size_t c = begin; c < end; ++c) {
      share.cpus.insert(share.cpus.end(), cores[c].begin(), cores[c].end());
    }
    share.bound = true;
    share.threads = static_cast<int>(end - begin);
  } else if (ranks <= by_core_order.size()) {
    const auto [begin, end] = block(by_core_order.size(), ranks, rank);
    share.cpus.assign(by_core_order.begin() + static_cast<std::ptrdiff_t>(begin),
                      by_core_order.begin() + static_cast<std::ptrdiff_t>(end));
    share.bound = true;
    share.threads = static_cast<int>(end - begin);
  } else {
    share.cpus = by_core_order;
    share.bound = false;
    share.threads = 1;  // the CPUs are already more than taken by the ranks themselves
  }
  std::sort(share.cpus.begin(), share.cpus.end());
  return share;
}

}  // namespace kolo::placement
