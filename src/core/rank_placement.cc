#include "core/rank_placement.h"

#include "base/errors.h"
#include "core/launcher_watch.h"
#include "placement/affinity.h"
#include "placement/cpu_topology.h"

namespace kolo::core {

namespace {

// The mask the process began with, read once (init runs under the runtime's lock).
const std::vector<int>& first_seen_mask() {
  static const std::vector<int> mask = placement::thread_affinity();
  return mask;
}

// The share applied by an earlier init of this process, so a later one moves those threads too.
std::vector<int>& applied_share() {
  static std::vector<int> share;
  return share;
}

// The CPUs the whole job may use on this host (see place_rank).
std::vector<int> job_cpus(const Config& config, const EnvLookup& lookup) {
  if (config.job_cpus) return *config.job_cpus;
  if (const auto launcher = local_launcher(lookup)) {
    try {
      return placement::thread_affinity(*launcher);
    } catch (const SystemError&) {  // kolorun gone meanwhile: the rank's own mask will do
    }
  }
  return first_seen_mask();
}

}  // namespace

RankPlacement place_rank(const Config& config, const EnvLookup& lookup, int local_rank,
                         int local_size, const Logger& logger) {
  RankPlacement result;
  result.job_cpus = job_cpus(config, lookup);
  placement::RankPlanInput input;
  input.bind_to = config.bind_to;
  input.launcher_share = config.cpu_share;
  input.bound_by = config.bound_by_launcher;
  input.job_cpus = placement::describe_cpus(result.job_cpus);
  input.own_mask = first_seen_mask();
  input.local_rank = local_rank;
  input.local_size = local_size;
  const placement::RankPlan plan = placement::plan_rank(input);
  result.threads = plan.threads;
  result.summary = plan.summary;
  result.host_cpus = plan.host_cpus;
  if (plan.restrict_to) {
    std::vector<std::vector<int>> from{first_seen_mask(), result.job_cpus};
    if (!applied_share().empty()) from.push_back(applied_share());
    // The caller's thread among them: the background thread and later threads inherit its mask.
    const int moved = placement::move_threads(from, *plan.restrict_to);
    applied_share() = *plan.restrict_to;
    logger.debug("placement: {} thread(s) moved", moved);
  }
  result.cpus = placement::thread_affinity();
  logger.info("placement: {}", result.summary);
  return result;
}

}  // namespace kolo::core
