#include "placement/rank_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/errors.h"
#include "placement/cpu_list.h"

namespace kolo::placement {

namespace {

std::vector<int> ids_of(const std::vector<Cpu>& cpus) {
  std::vector<int> ids;
  for (const Cpu& cpu : cpus) ids.push_back(cpu.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

BindTo parse_bind_to(const std::string& text, const std::string& what) {
  if (text == "core") return BindTo::core;
  if (text == "none") return BindTo::none;
  throw InvalidArgument(fmt::format(
      "{}='{}': expected 'core' (each local rank its own share of the job's cores, the default) "
      "or 'none' (ranks use every CPU the job may use)",
      what, text));
}

RankPlan plan_rank(const RankPlanInput& input) {
  RankPlan plan;
  const std::vector<int> job_ids = ids_of(input.job_cpus);
  const std::string job = format_cpu_list(job_ids);
  plan.host_cpus = static_cast<int>(job_ids.size());
  if (input.launcher_share) {
    // The share's physical cores: the count kolorun put in OMP_NUM_THREADS unless the user had.
    std::vector<Cpu> share;
    for (const Cpu& cpu : input.job_cpus) {
      if (std::binary_search(input.launcher_share->begin(), input.launcher_share->end(), cpu.id)) {
        share.push_back(cpu);
      }
    }
    plan.threads = share.empty() ? 1 : share_for_local_rank(share, 0, 1).threads;
    plan.summary = fmt::format("placed by kolorun on CPUs {} of {}",
                               format_cpu_list(*input.launcher_share), job);
    return plan;
  }
  if (input.bind_to == BindTo::none) {
    plan.summary = fmt::format("not bound (bind-to none): CPUs {}", job);
    return plan;
  }
  if (input.bound_by) {
    plan.summary =
        fmt::format("bound by the launcher ({}); kolo keeps its choice", *input.bound_by);
    plan.host_cpus = 0;  // the rank's own mask says nothing about the job's
    return plan;
  }
  if (!input.own_mask.empty() && input.own_mask != job_ids) {
    plan.summary = fmt::format("placed before init on CPUs {} (the job's are {}); kept",
                               format_cpu_list(input.own_mask), job);
    return plan;
  }
  const Share share = share_for_local_rank(input.job_cpus, input.local_rank, input.local_size);
  plan.threads = share.threads;
  if (!share.bound) {
    plan.summary = fmt::format(
        "not bound: {} local ranks on {} CPUs ({}) is more ranks than CPUs; 1 thread each",
        input.local_size, input.job_cpus.size(), job);
    return plan;
  }
  plan.restrict_to = share.cpus;
  plan.summary = fmt::format("local rank {} of {} on CPUs {} of {}, {} thread(s)", input.local_rank,
                             input.local_size, format_cpu_list(share.cpus), job, share.threads);
  return plan;
}

}  // namespace kolo::placement
