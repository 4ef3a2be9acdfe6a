// The session's observers in one place: the timeline, the stall inspector and the autotuner. The
// session calls three hooks per cycle (cycle_started, agreed, cycle_finished) on its background
// thread; start_timeline / stop_timeline come from any thread (hvd.start_timeline()).
// Rank 0 alone writes the timeline (as Horovod's coordinator does), inspects stalls and tunes;
// every rank applies tuned parameters in the cycle whose response list carries them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/logger.h"
#include "core/autotune.h"
#include "core/config.h"
#include "core/executor.h"
#include "core/stall_inspector.h"
#include "core/tensor_entry.h"
#include "core/timeline.h"
#include "negotiation/controller.h"

namespace kolo::core {

// The parameters in force, and whether autotune is still searching.
struct TuningState {
  bool autotuning = false;
  negotiation::TunedParameters current;
};

class Observability {
 public:
  // Throws kolo::Error when the timeline or autotune log file cannot be created.
  Observability(const Config& config, int rank, negotiation::Controller& controller,
                Executor& executor, const Logger& logger);
  ~Observability();
  Observability(const Observability&) = delete;
  Observability& operator=(const Observability&) = delete;

  // How long a cached request waits on its bit before going to the coordinator, so the stall
  // inspector sees it: well before the warning time.
  static std::chrono::milliseconds resend_cached_after(const Config& config);

  // Any thread. On ranks other than 0 these do nothing (rank 0 writes the job's timeline).
  void start_timeline(const std::string& path, bool mark_cycles);
  // The file is complete when this returns: it waits (up to a second) for the background thread
  // to finish the cycle that may still be writing to it, i.e. to begin its next one.
  // `wake_loop` makes an idle loop begin one; it is called once the wait knows which cycle it
  // waits for (a cycle begun between the two would be missed).
  void stop_timeline(const std::function<void()>& wake_loop);

  // Any thread: a global instant event in the timeline, written at the next cycle (dropped when
  // no timeline is being written).
  void mark_timeline(std::string name);

  // Background thread, every cycle, in this order.
  void cycle_started(const std::vector<negotiation::Request>& fresh);
  void agreed(const negotiation::ResponseList& list,
              const std::map<std::string, TensorEntry>& pending);
  void cycle_finished();

  [[nodiscard]] std::chrono::microseconds cycle_time() const;
  [[nodiscard]] TuningState tuning_state() const;

 private:
  void install_timeline(std::shared_ptr<Timeline> timeline);
  void inspect_stalls();
  void apply(const negotiation::TunedParameters& parameters);

  const int rank_;
  negotiation::Controller& controller_;
  Executor& executor_;
  const Logger& logger_;

  mutable std::mutex mutex_;            // guards timeline_, tuning_ and cycles_
  std::shared_ptr<Timeline> timeline_;  // null: no timeline
  uint64_t cycles_ = 0;                 // cycles started
  std::vector<std::string> marks_;      // mark_timeline() calls not yet written
  std::condition_variable cycle_started_;
  TuningState tuning_;

  // Background thread only.
  std::shared_ptr<Timeline> cycle_timeline_;  // timeline_ as of this cycle's start
  std::optional<StallInspector> stall_;       // rank 0 with the stall check on
  std::optional<Autotuner> tuner_;            // rank 0 with autotune on
  uint64_t cycle_bytes_ = 0;                  // allreduced in this cycle
};

}  // namespace kolo::core
