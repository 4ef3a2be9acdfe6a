#include "core/reduce_threads.h"

#include <algorithm>
#include <system_error>

#include "placement/affinity.h"

namespace kolo::core {

namespace {
constexpr int kAutoMaxThreads = 4;
}  // namespace

int reduce_threads_for(int setting, std::optional<int> share_threads, int own_cpus,
                       int local_size) {
  if (setting > 0) return setting;
  const int share = share_threads.value_or(own_cpus / std::max(local_size, 1));
  const int usable = std::min(share, own_cpus);
  return usable >= 2 ? std::min(usable, kAutoMaxThreads) : 1;
}

ReduceHelpers::ReduceHelpers(const Config& config, const RankPlacement& placement, int local_size,
                             comm::Communicator& comm, const Logger& logger) {
  if (comm.size() == 1) return;  // no reduction
  const int threads =
      reduce_threads_for(config.reduce_threads, placement.threads,
                         static_cast<int>(placement::thread_affinity().size()), local_size);
  logger.debug("reduce threads: {} (REDUCE_THREADS={}, 0 = auto)", threads, config.reduce_threads);
  if (threads <= 1) return;
  try {
    splitter_ = std::make_unique<comm::WorkSplitter>(static_cast<size_t>(threads));
  } catch (const std::system_error& error) {  // a thread limit (ulimit -u, a container's pids)
    logger.warn(
        "could not start {} reduce helper thread(s) ({}): the collectives' thread folds "
        "alone",
        threads - 1, error.what());
    return;
  }
  comm_ = &comm;
  comm_->set_work_splitter(splitter_.get());
}

ReduceHelpers::~ReduceHelpers() {
  if (comm_ != nullptr) comm_->set_work_splitter(nullptr);
}

}  // namespace kolo::core
