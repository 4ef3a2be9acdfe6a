// Everything one init() creates and shutdown() tears down: the connected world, the communicator,
// the process sets (each with its controller, backend and executor), and the background thread
// that runs the cycle loop:
//   take new entries -> the global set's cycle (negotiate, a collective over all ranks every
//   cycle: also the heartbeat; execute) -> the cycle of every other set this rank belongs to, in
//   ascending set id -> sleep until the next cycle or until an enqueue wakes it.
// A blocking call on one host runs those cycles itself (drive()): the thread that waits for the
// result takes the cycle lock and steps the loop while the background thread sleeps, so an op
// costs no wake-up of the background thread and no wake-up back (two context switches on the
// rank's core each way, the bulk of a small op's latency when a rank has one core).
// Every rank runs the global cycle first and the sets in one order, so the members of a set run
// its cycle in the same iteration, and a set's negotiation never waits on another set's tensors.
// Adding or removing a set is negotiated on the global set, so it takes effect in the same cycle
// on every rank and the new set's id is the same everywhere.
// A transport failure is fatal for the session: every pending and later op fails with the
// message naming the peer and the root cause (core/failure_report.h), and the links are closed so
// the other ranks notice too. Which sets exist is core/process_set_registry.h; the control
// requests that change it are in session_control.cc.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "backends/backend.h"
#include "base/errors.h"
#include "base/logger.h"
#include "bootstrap/launch_info.h"
#include "bootstrap/world.h"
#include "comm/communicator.h"
#include "core/config.h"
#include "core/deadlock_watch.h"
#include "core/executor.h"
#include "core/failure_report.h"
#include "core/handle_table.h"
#include "core/observability.h"
#include "core/process_set.h"
#include "core/process_set_registry.h"
#include "core/rank_placement.h"
#include "core/reduce_threads.h"
#include "core/tensor_queue.h"
#include "negotiation/controller.h"
#include "rendezvous/store.h"

namespace kolo::core {

struct SessionStats {
  uint64_t cycles = 0;
  uint64_t fast_cycles = 0;     // agreed through the response cache's bit vector alone
  uint64_t full_exchanges = 0;  // request lists went to the coordinator
  // Loop iterations a blocking caller ran on its own thread (Session::drive), of `cycles`.
  uint64_t driven_cycles = 0;
  uint64_t cache_hits = 0;
  // Response-cache entries held now, summed over this rank's process sets, and their summed
  // capacity: a long run with ever new tensor names must keep entries <= capacity.
  uint64_t cache_entries = 0;
  uint64_t cache_capacity = 0;
  uint64_t fused_groups = 0;
  uint64_t fused_tensors = 0;
  // Time the background thread spent agreeing on what to run (controller cycles of every set,
  // waiting on peers included), in microseconds: the negotiation cost of a step.
  uint64_t negotiation_us = 0;
  TuningState tuning;  // parameters in force (autotune changes them)
};

class Session {
 public:
  Session(const Config& config, const bootstrap::LaunchInfo& launch, uint64_t round,
          HandleTable& handles, const Logger& logger);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  [[nodiscard]] const bootstrap::WorldInfo& world() const { return world_; }
  // Which CPUs this rank was given at init, and why (core/rank_placement.h).
  [[nodiscard]] const RankPlacement& placement() const { return placement_; }

  // Validates and queues; throws (on the caller's thread) for a duplicate name in flight, a
  // process set that is unknown or does not include this rank, or when the session failed.
  // Stamps request.rank with this rank's index in the process set.
  HandleId enqueue(TensorEntry entry);
  // Runs the loop's cycles on the calling thread until `handle` (submitted with caller_drives)
  // is done, for at most `timeout`; then hands what remains back to the background thread.
  // True when done; rethrows its failure as HandleTable::wait_for does.
  bool drive(HandleId handle, std::chrono::milliseconds timeout);
  // Gives entries queued for a caller to drive to the background thread now (a caller that
  // polls its handle instead of waiting for it).
  void hand_to_background() { queue_.wake(); }
  // Whether callers may run cycles themselves (CALLER_DRIVES, through the host arena or alone).
  [[nodiscard]] bool callers_drive() const { return caller_drives_; }

  // Collectives over all ranks whose handle's output is one int64 (see Runtime): the new set's
  // id; 1 if the set was removed; the last rank that joined.
  HandleId request_add_process_set(std::vector<int> ranks);
  HandleId request_remove_process_set(int32_t id);
  // `device`: the CUDA device for a joined rank's zeros (hvd.join(device)); -1: the GPU of its
  // earlier CUDA ops.
  HandleId request_join(int device = -1);

  // Ranks (ascending world ranks) of a registered set; throws InvalidArgument for an unknown id.
  [[nodiscard]] std::vector<int> process_set_ranks(int32_t id) const;
  [[nodiscard]] std::vector<int32_t> process_set_ids() const;
  // Negotiates shutdown with the other ranks and joins the background thread. Throws (naming the
  // peer) when a peer died or stopped responding during that negotiation.
  void shutdown();
  [[nodiscard]] SessionStats stats() const;
  // hvd.start_timeline / stop_timeline (rank 0 writes; no-ops elsewhere). Any thread.
  void start_timeline(const std::string& path, bool mark_cycles) {
    observability_->start_timeline(path, mark_cycles);
  }
  // An idle loop runs no cycles (Session::idle), and the timeline closes at the next one.
  void stop_timeline() {
    observability_->stop_timeline([this] { queue_.wake(); });
  }
  // A global instant event in the timeline (elastic: the round's ELASTIC_RESET). Any thread.
  void mark_timeline(std::string name) { observability_->mark_timeline(std::move(name)); }

 private:
  void run_loop();
  // One iteration of the loop (take new entries, the global set's cycle, the other sets',
  // stats, the deadlock watch), on whichever thread holds cycle_mutex_. False once the loop has
  // ended (shutdown agreed, or the session failed; loop_ended_ is then set).
  bool step(bool by_caller);
  // Whether the background thread, having woken, has a cycle to run (cycle_mutex_ held).
  [[nodiscard]] bool has_reason_to_cycle();
  // Entries queued for driving that no caller has driven for a while (its caller was
  // interrupted between submit and wait, or polls instead of waiting): the background thread's.
  [[nodiscard]] bool undriven_entries();
  [[nodiscard]] bool any_pending() const;  // cycle_mutex_ held
  // Queues a process-set/join request on the global set, named `kolo.<kind>.<call number>`,
  // with its arguments (negotiation::Request::args).
  HandleId enqueue_control(negotiation::OpType op, std::string_view kind,
                           std::vector<int64_t> args);
  std::map<int32_t, std::vector<negotiation::Request>> take_new_entries();
  negotiation::ResponseList run_cycle(ProcessSet& set, std::vector<negotiation::Request> fresh,
                                      bool shutting_down);
  void apply_control(ProcessSet& set, const negotiation::Response& response);
  int64_t add_set(const std::vector<int64_t>& ranks);
  int64_t remove_set(int32_t id);
  void publish_stats();
  // Responses every set's executor has run so far (progress, for the deadlock watch).
  [[nodiscard]] uint64_t responses_run() const;
  // After each loop iteration: fails what can never complete once every rank has been blocked
  // waiting, with nothing completing, for the peer timeout (core/deadlock_watch.h).
  void watch_for_deadlock(uint64_t responses_before);
  // Sleeps until this rank has work or a peer began a cycle (see the .cc); may_back_off: nothing
  // but this rank's own work needs it in a cycle, so it may look for peers' cycles less often.
  void idle(bool may_back_off);
  // Ends the loop after `failure`: every pending and queued handle fails with a message naming
  // this rank (and the peer, for a PeerError), and the links close so peers notice (cycle_mutex_).
  void end_loop(const std::exception& failure);
  void leave_together();
  // Fails every pending and queued handle with `message`; returns how many.
  size_t fail_everything(const std::string& message);
  // Keeps `message` for shutdown() to raise when the failure reached no handle.
  void note_if_untold(const std::string& message, size_t failed_handles);

  const Config config_;
  const Logger& logger_;
  HandleTable& handles_;
  const uint64_t round_;
  const std::string failure_key_;  // where the launcher reports a lost rank (LaunchInfo)
  bootstrap::WorldInfo world_;
  RankPlacement placement_;
  std::vector<std::unique_ptr<transport::Link>> links_;
  std::unique_ptr<rendezvous::Store> store_;
  std::unique_ptr<comm::Communicator> comm_;
  BackendFactory make_backend_;
  TensorQueue queue_;

  std::unique_ptr<FailureReport> failure_report_;
  std::unique_ptr<ProcessSetRegistry> registry_;  // every registered set, member or not
  // Whoever steps the loop holds cycle_mutex_: the background thread, or a caller in drive().
  // Everything the loop owns (sets_ and below, up to mutex_) is touched under it only.
  std::mutex cycle_mutex_;
  bool loop_ended_ = false;
  // Over the links a peer that begins a cycle wakes this rank with its bytes; through the host
  // arena (every rank on one host) nothing does (see idle()). Set before the thread starts.
  bool peers_send_cycle_bytes_ = true;
  // Blocking calls may drive their own cycles (CALLER_DRIVES, and only through the arena: over
  // the links each cycle's bytes would wake the sleeping background thread anyway).
  bool caller_drives_ = false;
  std::atomic<int> drivers_{0};  // threads inside drive() now
  // When a caller's wait last returned with its operation unfinished (steady-clock ns since the
  // epoch; 0: never). Such a caller waits again at once (the Python layer checks for Ctrl-C
  // every 100 ms between waits), so for a moment it still counts as waiting: a cycle run in that
  // gap must not tell the deadlock watch that this rank stopped waiting (under load the gaps
  // reset it often enough that a real deadlock was never reported).
  std::atomic<int64_t> unfinished_wait_end_ns_{0};
  [[nodiscard]] bool waits_or_just_waited() const;
  bool note_unfinished(bool done);         // records an unfinished wait's end; returns `done`
  std::atomic<bool> peer_hung_up_{false};  // idle() saw a link's hang-up: the next cycle reports it
  // The sets this rank belongs to, by id (ascending).
  std::map<int32_t, std::unique_ptr<ProcessSet>> sets_;
  // Timeline, stall inspector and autotune watch the global set's controller and executor;
  // declared after sets_ so they go first.
  std::unique_ptr<Observability> observability_;
  DeadlockWatch deadlock_watch_;

  // hvd.join(device)'s device, for the stand-ins of every set's executor. Written by the user
  // thread before it enqueues the join request, read by the thread running cycles once that
  // request (or a later cycle) says this rank joined: the queue's lock orders the write before
  // that read. Atomic because a rank may call join again (from any thread) while a cycle runs.
  std::atomic<int> join_device_{-1};

  mutable std::mutex mutex_;  // guards everything below up to stats_
  std::set<std::pair<int32_t, std::string>> names_in_flight_;  // (process set, name)
  uint64_t control_calls_ = 0;  // names add/remove/join requests identically on every rank
  std::optional<std::string> failure_;
  std::optional<std::string> untold_failure_;  // a failure no caller has been told of yet
  SessionStats stats_;

  std::atomic<bool> shutdown_requested_{false};
  // Written under cycle_mutex_ when the loop ends, read after the background thread's join.
  bool failed_in_shutdown_ = false;
  Duration negotiation_time_{};       // cycle_mutex_; published through stats_
  uint64_t driven_cycles_ = 0;        // cycle_mutex_; published through stats_
  std::vector<int32_t> shutdown_by_;  // ranks that announced the agreed shutdown (cycle_mutex_)
  // Helper threads for large arena allreduces (REDUCE_THREADS; null: none), started by the
  // background thread so they inherit its mask, joined at shutdown (cycle_mutex_).
  std::unique_ptr<ReduceHelpers> reduce_helpers_;
  std::thread thread_;
};

}  // namespace kolo::core
