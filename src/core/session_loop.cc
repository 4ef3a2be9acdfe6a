// Who runs the Session's cycle loop (core/session.h): the background thread (run_loop, its idle
// wait), a blocking caller on its own thread (drive), one iteration either way (step), and how
// the loop ends on a failure (end_loop). What one cycle does is in session.cc.
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

#include "base/errors.h"
#include "comm/collectives.h"
#include "comm/patient_waits.h"
#include "core/session.h"

namespace kolo::core {

namespace {
// The idle background thread's longest wait between looks at the arena, and the age at which it
// takes entries queued for a caller to drive: in cycle times (64 ms by default).
constexpr int kLongestLookInCycles = 64;
}  // namespace

void Session::run_loop() {
  // The first cycle runs at once on every rank, as it always did; later ones when there is a
  // reason (work, a peer's cycle, shutdown), unless a caller in drive() ran them already.
  bool first = true;
  {
    std::lock_guard lock(cycle_mutex_);  // also: the constructor pinned this thread
    reduce_helpers_ =
        std::make_unique<ReduceHelpers>(config_, placement_, world_.local_size, *comm_, logger_);
  }
  for (;;) {
    bool pending = false;
    bool may_back_off = false;
    {
      std::lock_guard lock(cycle_mutex_);
      if (loop_ended_) return;
      if ((std::exchange(first, false) || has_reason_to_cycle()) && !step(false)) return;
      // Sleep out the cycle unless new work (or shutdown) arrives; a dead peer ends the wait.
      // With operations still pending here the next cycle starts at once: it waits inside its
      // negotiation collective, which wakes the moment the last peer enters its own cycle. A
      // peer on the host arena sends no bytes that would end an idle wait early, so sleeping
      // here would cost up to a whole cycle time per round (1 ms, the tail of every batch of
      // async operations).
      pending = any_pending();
      may_back_off = !peers_send_cycle_bytes_ && sets_.size() == 1;
    }
    // Pending: no idle wait at all, not even a zero-timeout one, whose preparation of the
    // links (the wait fence, a membarrier(2), for shared-memory links armed for reading) cost
    // the caller's core a few us per cycle; the next cycle's collective notices a dead peer.
    if (pending) continue;
    try {
      idle(may_back_off);
    } catch (const std::exception& error) {  // a peer hung up (wait_idle names it)
      std::lock_guard lock(cycle_mutex_);
      if (!loop_ended_) end_loop(error);
      return;
    }
  }
}

bool Session::step(bool by_caller) {
  if (by_caller) ++driven_cycles_;
  try {
    auto fresh = take_new_entries();
    const uint64_t responses_before = responses_run();
    sets_.at(kGlobalProcessSet)->controller().set_waiting(waits_or_just_waited());
    negotiation::ResponseList agreed = run_cycle(
        *sets_.at(kGlobalProcessSet), std::move(fresh[kGlobalProcessSet]), shutdown_requested_);
    if (agreed.shutdown) {
      publish_stats();
      shutdown_by_ = agreed.shutdown_ranks;
      leave_together();
      loop_ended_ = true;
      fail_everything(fmt::format(
          "kolo rank {}: the job has shut down (rank{} {} called "
          "shutdown() or its script ended); operations pending then or "
          "submitted since cannot complete",
          world_.rank, shutdown_by_.size() == 1 ? "" : "s", fmt::join(shutdown_by_, ", ")));
      queue_.wake();  // a background thread asleep in idle() sees the end
      return false;
    }
    // Ascending id on every rank; the global cycle may just have added or removed sets, which
    // it did in the same cycle everywhere.
    for (auto& [id, set] : sets_) {
      if (id == kGlobalProcessSet) continue;
      (void)run_cycle(*set, std::move(fresh[id]), false);
      set->inspect_stalls(logger_);
    }
    publish_stats();
    watch_for_deadlock(responses_before);
    return true;
  } catch (const std::exception& error) {
    end_loop(error);
  }
  return false;
}

bool Session::drive(HandleId handle, std::chrono::milliseconds timeout) {
  // Over the links the sleeping background thread arms them for reading (Session::idle): only
  // one thread may then use them, and it is the background thread.
  if (!caller_drives_) return note_unfinished(handles_.wait_for(handle, timeout));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const comm::PatientWaits patient;  // nothing else of this rank runs meanwhile
  drivers_.fetch_add(1, std::memory_order_relaxed);
  // Whether the background thread must take over: work of others left pending, or this handle
  // left unfinished while the caller looks for Ctrl-C. A lone blocking op never wakes it.
  bool hand_over = false;
  while (!handles_.poll(handle)) {
    // The background thread may be in a cycle (other work, or a peer's): it may complete this
    // handle too; then the wait ends without a cycle of our own. A plain lock, not a timed one:
    // one cycle is short (the peers' background threads join it within a cycle time), and
    // ThreadSanitizer cannot follow pthread_mutex_clocklock, which a timed lock becomes.
    std::lock_guard lock(cycle_mutex_);
    if (loop_ended_ || handles_.poll(handle)) break;
    if (!step(/*by_caller=*/true)) break;
    hand_over = any_pending() || queue_.has_entries();
    if (std::chrono::steady_clock::now() >= deadline) {
      hand_over = true;
      break;
    }
  }
  drivers_.fetch_sub(1, std::memory_order_relaxed);
  if (hand_over) queue_.wake();
  return note_unfinished(handles_.wait_for(handle, std::chrono::milliseconds(0)));
}

namespace {

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// How long after an unfinished wait its caller still counts as waiting: twice the Python
// layer's 100 ms between waits, far below any peer timeout (the deadlock watch's bound).
constexpr int64_t kBetweenWaitsNs = 200'000'000;

}  // namespace

bool Session::note_unfinished(bool done) {
  if (!done) unfinished_wait_end_ns_.store(steady_now_ns(), std::memory_order_relaxed);
  return done;
}

bool Session::waits_or_just_waited() const {
  // A caller driving its own cycles waits too, though not on the handle table's condition.
  if (handles_.anyone_waiting() || drivers_.load(std::memory_order_relaxed) > 0) return true;
  const int64_t ended = unfinished_wait_end_ns_.load(std::memory_order_relaxed);
  return ended != 0 && steady_now_ns() - ended < kBetweenWaitsNs;
}

bool Session::any_pending() const {
  return std::any_of(sets_.begin(), sets_.end(),
                     [](const auto& set) { return !set.second->pending().empty(); });
}

bool Session::undriven_entries() {
  // Young entries are left to the caller that queued them: a blocking call drives them within
  // microseconds, and gradients the optimizer defers to its synchronize() (kolo.torch's
  // optimizer, when the rank has one core) within a step. Only those left longer are taken.
  return drivers_.load(std::memory_order_relaxed) == 0 &&
         queue_.has_entries_older_than(observability_->cycle_time() * kLongestLookInCycles);
}

bool Session::has_reason_to_cycle() {
  return peers_send_cycle_bytes_ || peer_hung_up_.exchange(false) || queue_.signalled() ||
         shutdown_requested_ || any_pending() || comm::arena_member_started_next_step(*comm_) ||
         undriven_entries();
}

void Session::idle(bool may_back_off) {
  // Over the links a peer that begins a cycle wakes this rank with its bytes, and every wait
  // that times out runs a cycle, as Horovod's loop does. Through the host arena nothing wakes a
  // sleeping rank, and a cycle run on every timeout only met peers with nothing to do either:
  // each idle cycle time cost every rank a rendezvous in the arena, at unrelated moments, so one
  // slept on the arena's futex for the other (training the CNN at np 2: ~30 of the rank's 75
  // context switches per step, 0.35 ms of the background thread's 1.3 ms of CPU, all during the
  // forward pass). So while idle a rank looks at the arena once per cycle time instead and
  // runs a cycle only when a peer began one (it waits for this rank in the arena, as long as
  // it did before), when its caller submits or on shutdown. A dead peer still ends the wait.
  //
  // Those looks back off (cycle time, twice that, ... up to 64 of them) when only the global
  // process set exists: then a peer's cycle can finish nothing without this rank's own
  // submissions, which wake it at once, and a rank has nothing to learn from it sooner but a
  // peer's shutdown or stall report. Each look costs the rank's core a wake-up and two context
  // switches (its caller's thread is preempted): training the CNN at np 2, ~30 looks per 30 ms
  // step were 0.8 of the background thread's 2.8 ms of CPU per step. With other process sets a
  // peer's cycle may carry a set's work that needs this rank in the global cycle: the cycle
  // time stays.
  const auto cycle_time = observability_->cycle_time();
  const auto longest_look = may_back_off ? cycle_time * kLongestLookInCycles : cycle_time;
  for (auto look = cycle_time;; look = std::min(look * 2, longest_look)) {
    if (caller_drives_) {
      // A caller may be running a cycle on these links right now: watch their descriptors only.
      if (comm_->wait_wake_or_hangup(queue_.wake_fd(), look)) {
        peer_hung_up_ = true;  // the next cycle's collective reports it, naming the peer
        return;
      }
    } else {
      comm_->wait_idle(queue_.wake_fd(), look, peers_send_cycle_bytes_);
    }
    // Entries queued for a caller that did not come to drive them (interrupted between its
    // submit and its wait, or an async handle polled but never waited for) are the background
    // thread's once they have waited the longest look (undriven_entries).
    if (peers_send_cycle_bytes_ || queue_.signalled() || shutdown_requested_ ||
        undriven_entries()) {
      return;
    }
    // The arena is the loop's (cycle_mutex_): a caller may be in a cycle through it right now,
    // and then that caller meets the peer's cycle itself.
    std::unique_lock lock(cycle_mutex_, std::try_to_lock);
    if (lock.owns_lock() && (loop_ended_ || comm::arena_member_started_next_step(*comm_))) return;
  }
}

void Session::end_loop(const std::exception& failure) {
  const auto* peer_error = dynamic_cast<const PeerError*>(&failure);
  std::string message =
      fmt::format("kolo rank {}/{}: {}", world_.rank, world_.size,
                  peer_error ? failure_report_->with_root_cause(*peer_error) : failure.what());
  logger_.error("{}", message);
  comm_->abort();
  // NCCL kernels waiting for a dead peer would hold the GPU (and every stream that waits for
  // kolo's completion events) forever: their communicators are aborted now, not at the reset.
  for (auto& [id, set] : sets_) set->executor().drop_device_state();
  failed_in_shutdown_ = shutdown_requested_.load();
  loop_ended_ = true;
  note_if_untold(message, fail_everything(message));
  queue_.wake();  // a background thread asleep in idle() sees the end
}

}  // namespace kolo::core
