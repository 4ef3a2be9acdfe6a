#include "launcher/spawn/local_placement.h"

#include <fmt/format.h>

#include <algorithm>

#include "placement/affinity.h"
#include "placement/cpu_list.h"
#include "placement/cpu_topology.h"
#include "placement/rank_plan.h"

namespace kolo::launcher {

namespace {

placement::BindTo bind_policy(const Environment& env) {
  const auto found = find_setting(lookup_in(env), "BIND_TO");
  return found ? placement::parse_bind_to(found->value, found->variable) : placement::BindTo::core;
}

bool elastic(const Environment& env) {
  const auto found = env.find("KOLO_ELASTIC");
  return found != env.end() && found->second == "1";
}

std::vector<int> ids_of(const std::vector<placement::Cpu>& cpus) {
  std::vector<int> ids;
  for (const auto& cpu : cpus) ids.push_back(cpu.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

LocalPlacement::LocalPlacement()
    : LocalPlacement(placement::describe_cpus(placement::thread_affinity())) {}

LocalPlacement::LocalPlacement(std::vector<placement::Cpu> job_cpus)
    : job_cpus_(std::move(job_cpus)) {}

RankCpus LocalPlacement::for_rank(const SlotAssignment& slot, const Environment& env) const {
  RankCpus result;
  result.additions["KOLO_JOB_CPUS"] = placement::format_cpu_list(ids_of(job_cpus_));
  if (bind_policy(env) == placement::BindTo::none || elastic(env)) return result;
  const placement::Share share =
      placement::share_for_local_rank(job_cpus_, slot.local_rank, slot.local_size);
  if (share.bound) {
    result.cpus = share.cpus;
    result.additions["KOLO_CPU_SHARE"] = placement::format_cpu_list(share.cpus);
  }
  if (!env.contains("OMP_NUM_THREADS")) {
    result.additions["OMP_NUM_THREADS"] = std::to_string(share.threads);
  }
  return result;
}

std::string LocalPlacement::describe(int local_size, const Environment& env) const {
  const std::string job = placement::format_cpu_list(ids_of(job_cpus_));
  if (bind_policy(env) == placement::BindTo::none) {
    return fmt::format("placement: none (bind-to none): the {} local rank(s) share CPUs {}",
                       local_size, job);
  }
  if (elastic(env)) {
    return fmt::format("placement: each elastic worker takes its share of CPUs {} at each init",
                       job);
  }
  const placement::Share first = placement::share_for_local_rank(job_cpus_, 0, local_size);
  if (!first.bound) {
    return fmt::format(
        "placement: {} local ranks on {} CPU(s) ({}): not bound (more ranks than CPUs), 1 "
        "thread each",
        local_size, job_cpus_.size(), job);
  }
  std::string shares;
  for (int rank = 0; rank < local_size; ++rank) {
    const placement::Share share = placement::share_for_local_rank(job_cpus_, rank, local_size);
    shares += fmt::format("{}{}", rank == 0 ? "" : " ", placement::format_cpu_list(share.cpus));
  }
  return fmt::format(
      "placement: {} local rank(s) on their own share of CPUs {} (--bind-to none turns it "
      "off): {}",
      local_size, job, shares);
}

}  // namespace kolo::launcher
