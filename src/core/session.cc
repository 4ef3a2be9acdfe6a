#include "core/session.h"

#include <fmt/ranges.h>
#include <pthread.h>

#include <algorithm>
#include <utility>

#include "backends/backend_choice.h"
#include "base/errors.h"
#include "comm/collectives.h"
#include "core/bootstrap_options.h"
#include "core/local_checks.h"
#include "core/rank_placement.h"
#include "core/reduce_threads.h"
#include "core/thread_affinity.h"

namespace kolo::core {

Session::Session(const Config& config, const bootstrap::LaunchInfo& launch, uint64_t round,
                 HandleTable& handles, const Logger& logger)
    : config_(config),
      logger_(logger),
      handles_(handles),
      round_(round),
      failure_key_(launch.failure_key),
      deadlock_watch_(config.stall_check ? config.peer_timeout : std::chrono::milliseconds(0)) {
  bootstrap::Connected connected =
      bootstrap::connect_world(launch, bootstrap_options(config), round, logger);
  world_ = std::move(connected.world);
  links_ = std::move(connected.links);
  store_ = std::move(connected.store);

  std::vector<transport::Link*> borrowed;
  for (auto& link : links_) borrowed.push_back(link.get());
  comm::CommunicatorOptions comm_options;
  comm_options.peer_timeout = config.peer_timeout;
  comm_options.frame_limit = config.frame_limit;
  // Before any thread of the session starts, so that they all begin inside the rank's share.
  placement_ =
      place_rank(config_, process_env_lookup(), world_.local_rank, world_.local_size, logger_);
  // The ranks outnumber the CPUs the job may use, not the machine's: then waits yield at once.
  comm_options.host_cpus = placement_.host_cpus;
  comm_ = std::make_unique<comm::Communicator>(world_.rank, std::move(borrowed), world_.topology,
                                               comm_options);

  make_backend_ = [this](comm::Communicator& set_comm) -> std::unique_ptr<backends::Backend> {
    comm::AllreduceOptions allreduce_options;
    allreduce_options.small_message_bytes = config_.small_allreduce_bytes;
    if (config_.hierarchical_allreduce) {
      allreduce_options.hierarchical =
          *config_.hierarchical_allreduce ? comm::Hierarchical::on : comm::Hierarchical::off;
    }
    return backends::make_backend(config_.cpu_operations, set_comm, allreduce_options, world_.size);
  };
  failure_report_ = std::make_unique<FailureReport>(store_.get(), round_, world_.rank, world_.size,
                                                    logger_, failure_key_, world_.hostnames);
  registry_ = std::make_unique<ProcessSetRegistry>(world_.size);
  sets_.emplace(kGlobalProcessSet,
                std::make_unique<ProcessSet>(kGlobalProcessSet, registry_->ranks(kGlobalProcessSet),
                                             *comm_, config_, make_backend_, handles_, logger_));
  ProcessSet& global = *sets_.at(kGlobalProcessSet);
  observability_ = std::make_unique<Observability>(config_, world_.rank, global.controller(),
                                                   global.executor(), logger_);

  // A cycle starts with a small allreduce (the cache bits): through the host arena, a peer that
  // starts one sends no bytes, so the idle wait need not arm the links for them (the peer's
  // cycle waits in the arena until this rank's cycle time is up or its caller submits), nor pay
  // the wait fence that arming a shared-memory link for reading takes (transport/wait_fence.h).
  // A job of one rank has no peer to send any.
  peers_send_cycle_bytes_ = comm_->size() > 1 && !comm::small_allreduce_uses_arena(*comm_);
  caller_drives_ = config_.caller_drives && !peers_send_cycle_bytes_;
  // The thread waits for cycle_mutex_ until it is pinned: the reduce helpers it starts first
  // inherit its final mask.
  std::lock_guard lock(cycle_mutex_);
  thread_ = std::thread([this] { run_loop(); });
  // Named so that top -H, perf and gdb tell it from the framework's threads (15 characters at
  // most; a failure only leaves the process's name).
  (void)::pthread_setname_np(thread_.native_handle(), "kolo-background");
  // Pinned from here, before init() returns, so the setting holds from the first operation.
  if (auto core = core_for_local_rank(config_.thread_affinity, world_.local_rank, world_.local_size,
                                      logger_)) {
    pin_thread(thread_.native_handle(), *core, logger_);
  }
}

Session::~Session() {
  try {
    shutdown();
  } catch (const Error&) {  // already logged; a destructor must not throw
  }
}

HandleId Session::enqueue(TensorEntry entry) {
  const std::string& name = entry.request.name;
  const int32_t set_id = entry.request.process_set;
  {
    std::lock_guard lock(mutex_);
    if (failure_) {
      untold_failure_.reset();  // the caller learns it now
      throw Error(fmt::format("tensor '{}' not submitted: {}", name, *failure_));
    }
    if (shutdown_requested_) throw Error("kolo is shutting down: no new operations are accepted");
    const std::optional<std::vector<int>> set_ranks = registry_->find(set_id);
    if (!set_ranks) {
      throw InvalidArgument(fmt::format(
          "rank {}: tensor '{}' names process set {}, which is not registered (never added with "
          "hvd.add_process_set(), or removed)",
          world_.rank, name, set_id));
    }
    auto member = std::find(set_ranks->begin(), set_ranks->end(), world_.rank);
    if (member == set_ranks->end()) {
      throw InvalidArgument(fmt::format(
          "rank {} is not a member of process set {} (ranks {}): tensor '{}' cannot be submitted "
          "on it from this rank",
          world_.rank, set_id, *set_ranks, name));
    }
    if (names_in_flight_.contains({set_id, name})) {
      throw InvalidArgument(fmt::format(
          "rank {}: tensor name '{}' is already in flight; each pending operation needs a unique "
          "name (wait for the earlier one first)",
          world_.rank, name));
    }
    entry.request.rank = static_cast<int32_t>(member - set_ranks->begin());
    LocalProblem problem = find_local_problem(entry.request, *set_ranks, world_.rank);
    if (!problem.message.empty()) {
      // Sent anyway, marked invalid and without data or handle: the coordinator fails the name
      // on every rank, so the ranks that called correctly get an error too instead of a hang.
      entry.request.invalid = problem.message;
      entry.input = nullptr;
      entry.output = nullptr;
      entry.handle = kNoHandle;
      names_in_flight_.insert({set_id, name});
      queue_.push(std::move(entry));
      if (problem.bad_argument) throw InvalidArgument(problem.message);
      throw Error(problem.message);
    }
    names_in_flight_.insert({set_id, name});
    const bool caller_drives = entry.caller_drives && caller_drives_;
    entry.handle = handles_.create(caller_drives);
    // Pushed under the lock so fail_everything() can never miss an entry queued concurrently.
    const HandleId handle = entry.handle;
    queue_.push(std::move(entry), /*wake=*/!caller_drives);
    return handle;
  }
}

void Session::shutdown() {
  shutdown_requested_ = true;
  queue_.wake();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(cycle_mutex_);  // a caller in drive() may still hold it
    reduce_helpers_.reset();
  }
  // A peer that died or froze while the ranks were leaving together: the caller learns it (and
  // which rank), so a script exits non-zero and its launcher ends the job instead of waiting on
  // the frozen rank. The session is finished either way; init() may be called again.
  if (failed_in_shutdown_) {
    failed_in_shutdown_ = false;
    std::lock_guard lock(mutex_);
    untold_failure_.reset();
    throw Error(fmt::format("shutdown() did not complete with every rank: {}",
                            failure_.value_or("a peer failed")));
  }
  // The job failed while this rank had nothing in flight (a peer died between steps): nothing
  // told the caller yet, so shutdown() does, and the script does not end as if all was well.
  std::lock_guard lock(mutex_);
  if (untold_failure_) {
    const std::string message = *std::exchange(untold_failure_, std::nullopt);
    throw Error("the job failed while this rank had no operation in flight: " + message);
  }
}

SessionStats Session::stats() const {
  std::lock_guard lock(mutex_);
  SessionStats out = stats_;
  out.tuning = observability_->tuning_state();
  return out;
}

std::map<int32_t, std::vector<negotiation::Request>> Session::take_new_entries() {
  std::map<int32_t, std::vector<negotiation::Request>> fresh;
  for (TensorEntry& entry : queue_.take_all()) {
    auto set = sets_.find(entry.request.process_set);
    if (set == sets_.end()) {
      // Removed between enqueue() and now.
      {
        std::lock_guard lock(mutex_);
        names_in_flight_.erase({entry.request.process_set, entry.request.name});
      }
      handles_.fail(entry.handle,
                    fmt::format("tensor '{}' on rank {}: process set {} was removed before it ran",
                                entry.request.name, world_.rank, entry.request.process_set));
      continue;
    }
    fresh[set->first].push_back(entry.request);
    std::string name = entry.request.name;
    set->second->pending().emplace(std::move(name), std::move(entry));
  }
  return fresh;
}

negotiation::ResponseList Session::run_cycle(ProcessSet& set,
                                             std::vector<negotiation::Request> fresh,
                                             bool shutting_down) {
  using negotiation::OpType;
  bool joined = set.controller().joined();
  for (const auto& request : fresh) joined = joined || request.op == OpType::join;
  // The observers (timeline, stall inspector, autotune) follow the global set, whose cycle is the
  // one every rank runs.
  Observability* observers = set.id() == kGlobalProcessSet ? observability_.get() : nullptr;
  if (observers) observers->cycle_started(fresh);
  const auto negotiation_start = Clock::now();
  negotiation::ResponseList agreed = set.controller().cycle(std::move(fresh), shutting_down);
  negotiation_time_ += Clock::now() - negotiation_start;
  if (observers) observers->agreed(agreed, set.pending());

  // Names are settled before any handle completes, so a caller that wakes up may at once
  // resubmit the same name (every step does).
  std::vector<negotiation::Response> data, control;
  {
    std::lock_guard lock(mutex_);
    for (const auto& response : agreed.responses) {
      for (const auto& name : response.names) names_in_flight_.erase({set.id(), name});
    }
  }
  publish_stats();
  for (auto& response : agreed.responses) {
    const bool is_control = response.op == OpType::join || response.op == OpType::process_set_add ||
                            response.op == OpType::process_set_remove;
    (is_control ? control : data).push_back(std::move(response));
  }
  set.execute(data, joined, join_device_.load());
  if (observers) observers->cycle_finished();
  for (const auto& response : control) apply_control(set, response);
  agreed.responses.clear();
  return agreed;
}

void Session::publish_stats() {
  std::lock_guard lock(mutex_);
  stats_ = SessionStats{};
  stats_.cycles = sets_.at(kGlobalProcessSet)->controller().stats().cycles;
  stats_.driven_cycles = driven_cycles_;
  for (const auto& [id, set] : sets_) {
    const auto& counters = set->controller().stats();
    stats_.fast_cycles += counters.fast_cycles;
    stats_.full_exchanges += counters.full_exchanges;
    stats_.cache_hits += counters.cache_hits;
    stats_.negotiation_us = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(negotiation_time_).count());
    stats_.cache_entries += set->controller().cache().size();
    stats_.cache_capacity += set->controller().cache().capacity();
    stats_.fused_groups += set->executor().stats().fused_groups;
    stats_.fused_tensors += set->executor().stats().fused_tensors;
  }
}

uint64_t Session::responses_run() const {
  uint64_t total = 0;
  for (const auto& [id, set] : sets_) total += set->executor().stats().responses;
  return total;
}

void Session::watch_for_deadlock(uint64_t responses_before) {
  negotiation::Controller& global = sets_.at(kGlobalProcessSet)->controller();
  if (!deadlock_watch_.observe(global.all_waiting(), responses_run() != responses_before,
                               Clock::now())) {
    return;
  }
  // Every rank saw the same agreement; the coordinator (rank 0) holds the table and cancels.
  for (const auto& tensor : global.coordinator_pending()) {
    if (tensor.missing.empty()) continue;
    std::string message = deadlock_message(tensor, config_.peer_timeout);
    logger_.error("{}", message);
    global.cancel(tensor.name, message);
  }
}

void Session::leave_together() {
  // Every rank has seen the shutdown response; a last barrier makes sure none closes its links
  // while another still reads from them. A peer failing now changes nothing for this rank.
  comm_->stop_watching_uninvolved_peers();
  try {
    comm::barrier(*comm_);
  } catch (const Error& error) {
    logger_.debug("a peer left early during shutdown: {}", error.what());
  }
}

void Session::note_if_untold(const std::string& message, size_t failed_handles) {
  if (failed_handles > 0) return;
  std::lock_guard lock(mutex_);
  untold_failure_ = message;
}

size_t Session::fail_everything(const std::string& message) {
  std::vector<TensorEntry> queued;
  {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = message;
    names_in_flight_.clear();
    queued = queue_.take_all();
  }
  // Each handle's error names its own tensor: the caller may be waiting on several.
  size_t failed = 0;
  auto fail = [&](const TensorEntry& entry) {
    handles_.fail(entry.handle, fmt::format("tensor '{}' on rank {}: {}", entry.request.name,
                                            world_.rank, message));
    ++failed;
  };
  for (auto& [id, set] : sets_) {
    for (auto& [name, entry] : set->pending()) fail(entry);
    set->pending().clear();
  }
  for (TensorEntry& entry : queued) fail(entry);
  return failed;
}

}  // namespace kolo::core
