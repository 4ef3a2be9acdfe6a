// How many threads share a large host allreduce's copies and folds (REDUCE_THREADS, the
// collective's own thread included), and the helpers themselves for a rank's host arena.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "base/logger.h"
#include "comm/communicator.h"
#include "comm/work_splitter.h"
#include "core/config.h"
#include "core/rank_placement.h"

namespace kolo::core {

// Auto (setting 0) takes the rank's physical cores, as placement counted them for the
// framework's threads (`share_threads`; without a placement, the calling thread's CPUs over the
// host's local ranks), never more than the CPUs the calling thread may run on (one when
// THREAD_AFFINITY pins the background thread), capped at 4: streaming copies and folds saturate
// a socket's memory bandwidth with a few cores, and each thread costs a wake-up per arena step.
// A share of one core gives 1: helpers would only take turns with the collective's thread (and,
// with a rank per core, with the other ranks). A setting of N > 0 is taken as it is.
int reduce_threads_for(int setting, std::optional<int> share_threads, int own_cpus, int local_size);

// The helpers of a rank's communicator (and its subgroups): made on the thread that runs the
// collectives, after the rank's placement (they inherit its mask), and handed to the
// communicator (Communicator::set_work_splitter) until destroyed, which takes them back and joins
// them; destroy it before the communicator. No thread when the rank is alone or one is chosen.
class ReduceHelpers {
 public:
  ReduceHelpers(const Config& config, const RankPlacement& placement, int local_size,
                comm::Communicator& comm, const Logger& logger);
  ~ReduceHelpers();
  ReduceHelpers(const ReduceHelpers&) = delete;
  ReduceHelpers& operator=(const ReduceHelpers&) = delete;

  [[nodiscard]] size_t threads() const { return splitter_ ? splitter_->threads() : 1; }

 private:
  comm::Communicator* comm_ = nullptr;  // set while it holds the helpers
  std::unique_ptr<comm::WorkSplitter> splitter_;
};

}  // namespace kolo::core
