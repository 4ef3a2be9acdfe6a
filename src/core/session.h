// Everything one init() creates and shutdown() tears down: the connected world, the communicator,
// the controller, the backend, and the background thread that runs the cycle loop:
//   take new entries -> negotiate (controller, a collective every cycle: also the heartbeat)
//   -> execute agreed responses -> sleep until the next cycle or until an enqueue wakes it.
// A transport failure is fatal for the session: every pending and later op fails with the
// message naming the peer, and the links are closed so the other ranks notice too.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "backends/backend.h"
#include "base/errors.h"
#include "base/logger.h"
#include "comm/communicator.h"
#include "core/config.h"
#include "core/executor.h"
#include "core/handle_table.h"
#include "core/observability.h"
#include "core/tensor_queue.h"
#include "core/world.h"
#include "negotiation/controller.h"
#include "rendezvous/store.h"

namespace kolo::core {

struct SessionStats {
  uint64_t cycles = 0;
  uint64_t fast_cycles = 0;     // agreed through the response cache's bit vector alone
  uint64_t full_exchanges = 0;  // request lists went to the coordinator
  uint64_t cache_hits = 0;
  uint64_t fused_groups = 0;
  uint64_t fused_tensors = 0;
  TuningState tuning;  // parameters in force (autotune changes them)
};

class Session {
 public:
  Session(const Config& config, const LaunchInfo& launch, uint64_t round, HandleTable& handles,
          const Logger& logger);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  [[nodiscard]] const WorldInfo& world() const { return world_; }

  // Validates and queues; throws (on the caller's thread) for a duplicate name in flight or when
  // the session already failed.
  HandleId enqueue(TensorEntry entry);
  // Negotiates shutdown with the other ranks and joins the background thread.
  void shutdown();
  [[nodiscard]] SessionStats stats() const;
  // hvd.start_timeline / stop_timeline (rank 0 writes; no-ops elsewhere). Any thread.
  void start_timeline(const std::string& path, bool mark_cycles) {
    observability_->start_timeline(path, mark_cycles);
  }
  void stop_timeline() { observability_->stop_timeline(); }

 private:
  void run_loop();
  void leave_together();
  std::string with_root_cause(const PeerError& error) const;
  std::string trace_wait_chain(int awaited) const;
  void fail_everything(const std::string& message);

  const Config config_;
  const Logger& logger_;
  HandleTable& handles_;
  const uint64_t round_;
  WorldInfo world_;
  std::vector<std::unique_ptr<transport::Link>> links_;
  std::unique_ptr<rendezvous::Store> store_;
  std::unique_ptr<comm::Communicator> comm_;
  std::unique_ptr<negotiation::Controller> controller_;
  std::unique_ptr<backends::Backend> backend_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Observability> observability_;
  TensorQueue queue_;

  // Owned by the background thread.
  std::map<std::string, TensorEntry> pending_;

  mutable std::mutex mutex_;  // guards names_in_flight_, failure_, stats_
  std::set<std::string> names_in_flight_;
  std::optional<std::string> failure_;
  SessionStats stats_;

  std::atomic<bool> shutdown_requested_{false};
  std::vector<int32_t> shutdown_by_;  // ranks that announced the agreed shutdown (loop thread)
  std::thread thread_;
};

}  // namespace kolo::core
