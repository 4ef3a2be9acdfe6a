#include "core/session.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "backends/backend_choice.h"
#include "base/errors.h"
#include "comm/collectives.h"
#include "core/bootstrap.h"
#include "rendezvous/keys.h"

namespace kolo::core {

Session::Session(const Config& config, const LaunchInfo& launch, uint64_t round,
                 HandleTable& handles, const Logger& logger)
    : config_(config), logger_(logger), handles_(handles), round_(round) {
  Connected connected = bootstrap(launch, config, round, logger);
  world_ = std::move(connected.world);
  links_ = std::move(connected.links);
  store_ = std::move(connected.store);

  std::vector<transport::Link*> borrowed;
  for (auto& link : links_) borrowed.push_back(link.get());
  comm::CommunicatorOptions comm_options;
  comm_options.peer_timeout = config.peer_timeout;
  comm_options.frame_limit = config.frame_limit;
  comm_ = std::make_unique<comm::Communicator>(world_.rank, std::move(borrowed), world_.topology,
                                               comm_options);

  negotiation::ControllerOptions controller_options;
  controller_options.cache_capacity = config.cache_capacity;
  controller_ = std::make_unique<negotiation::Controller>(*comm_, controller_options, logger);

  comm::AllreduceOptions allreduce_options;
  allreduce_options.small_message_bytes = config.small_allreduce_bytes;
  if (config.hierarchical_allreduce) {
    allreduce_options.hierarchical =
        *config.hierarchical_allreduce ? comm::Hierarchical::on : comm::Hierarchical::off;
  }
  backend_ = backends::make_backend(config.cpu_operations, *comm_, allreduce_options, world_.rank,
                                    world_.size);
  executor_ = std::make_unique<Executor>(
      *backend_, handles_, ExecutorOptions{world_.rank, world_.size, config.fusion_threshold});

  thread_ = std::thread([this] { run_loop(); });
}

Session::~Session() { shutdown(); }

HandleId Session::enqueue(TensorEntry entry) {
  const std::string& name = entry.request.name;
  {
    std::lock_guard lock(mutex_);
    if (failure_) throw Error(fmt::format("tensor '{}' not submitted: {}", name, *failure_));
    if (shutdown_requested_) throw Error("kolo is shutting down: no new operations are accepted");
    if (names_in_flight_.contains(name)) {
      throw InvalidArgument(fmt::format(
          "rank {}: tensor name '{}' is already in flight; each pending operation needs a unique "
          "name (wait for the earlier one first)",
          world_.rank, name));
    }
    names_in_flight_.insert(name);
    entry.request.rank = world_.rank;
    entry.handle = handles_.create();
    // Pushed under the lock so fail_everything() can never miss an entry queued concurrently.
    const HandleId handle = entry.handle;
    queue_.push(std::move(entry));
    return handle;
  }
}

void Session::shutdown() {
  shutdown_requested_ = true;
  queue_.wake();
  if (thread_.joinable()) thread_.join();
}

SessionStats Session::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Session::run_loop() {
  try {
    for (;;) {
      std::vector<negotiation::Request> fresh;
      for (TensorEntry& entry : queue_.take_all()) {
        fresh.push_back(entry.request);
        std::string name = entry.request.name;
        pending_.emplace(std::move(name), std::move(entry));
      }
      negotiation::ResponseList agreed = controller_->cycle(std::move(fresh), shutdown_requested_);

      // Counters and names are settled before any handle completes, so a caller that wakes up
      // sees this cycle's figures and may at once resubmit the same name (every step does).
      {
        std::lock_guard lock(mutex_);
        const auto& counters = controller_->stats();
        stats_.cycles = counters.cycles;
        stats_.fast_cycles = counters.fast_cycles;
        stats_.full_exchanges = counters.full_exchanges;
        stats_.cache_hits = counters.cache_hits;
        for (const auto& response : agreed.responses) {
          for (const auto& name : response.names) names_in_flight_.erase(name);
        }
      }
      executor_->run(agreed.responses, pending_);
      {
        std::lock_guard lock(mutex_);
        stats_.fused_groups = executor_->stats().fused_groups;
        stats_.fused_tensors = executor_->stats().fused_tensors;
      }
      if (agreed.shutdown) {
        shutdown_by_ = agreed.shutdown_ranks;
        leave_together();
        break;
      }
      // Sleep out the cycle unless new work (or shutdown) arrives; a dead peer ends the wait.
      comm_->wait_idle(queue_.wake_fd(), config_.cycle_time);
    }
    fail_everything(fmt::format("kolo rank {}: the job has shut down (rank{} {} called "
                                "shutdown() or its script ended); operations pending then or "
                                "submitted since cannot complete",
                                world_.rank, shutdown_by_.size() == 1 ? "" : "s",
                                fmt::join(shutdown_by_, ", ")));
  } catch (const PeerError& error) {
    std::string message =
        fmt::format("kolo rank {}/{}: {}", world_.rank, world_.size, with_root_cause(error));
    logger_.error("{}", message);
    comm_->abort();
    fail_everything(message);
  } catch (const std::exception& error) {
    std::string message = fmt::format("kolo rank {}/{}: {}", world_.rank, world_.size, error.what());
    logger_.error("{}", message);
    comm_->abort();
    fail_everything(message);
  }
}

std::string Session::with_root_cause(const PeerError& error) const {
  // The peer named in `error` may only be a messenger: a rank that dies takes its neighbours down
  // one by one, and a rank that hangs leaves a chain of ranks each waiting on the next. The
  // rendezvous store tells the rest of the story.
  std::string message = error.what();
  if (!store_) return message;
  if (error.kind() == PeerError::Kind::silent && error.peer_rank() >= 0) {
    return message + trace_wait_chain(error.peer_rank());
  }
  try {
    const std::string first = store_->get(std::string(rendezvous::kFailureKey),
                                          std::chrono::seconds(2));
    message += "; the launcher reports the first failure: " + first;
  } catch (const Error&) {
    // No launcher report (not started by kolorun, or the peer is alive but silent).
  }
  return message;
}

std::string Session::trace_wait_chain(int awaited) const {
  // Every rank that times out publishes whom it waited on, then follows the chain from its own
  // awaited peer: the first rank that published nothing is the one that stopped responding.
  auto key = [&](int rank) { return fmt::format("kolo/round{}/stuck/{}", round_, rank); };
  std::vector<int> chain = {awaited};
  try {
    store_->set(key(world_.rank), std::to_string(awaited));
    while (static_cast<int>(chain.size()) <= world_.size) {
      // The others time out at about the same moment as this rank; give them a second.
      const int next = std::stoi(store_->get(key(chain.back()), std::chrono::seconds(1)));
      if (next == world_.rank || std::find(chain.begin(), chain.end(), next) != chain.end()) {
        return fmt::format("; ranks {} wait on each other in a cycle (collectives submitted in "
                           "different orders?)",
                           fmt::join(chain, ", "));
      }
      chain.push_back(next);
    }
  } catch (const TimeoutError&) {
    // chain.back() published nothing: it is the rank that stopped responding.
  } catch (const Error& error) {
    logger_.debug("could not trace the wait chain: {}", error.what());
    return "";
  }
  if (chain.size() == 1) {
    return fmt::format("; rank {} is alive but not responding (hung, stopped, or overloaded)",
                       awaited);
  }
  return fmt::format("; rank {} was itself waiting (chain {}): rank {} is the one not responding "
                     "(hung, stopped, or overloaded)",
                     awaited, fmt::join(chain, " -> "), chain.back());
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

void Session::fail_everything(const std::string& message) {
  std::vector<TensorEntry> queued;
  {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = message;
    names_in_flight_.clear();
    queued = queue_.take_all();
  }
  // Each handle's error names its own tensor: the caller may be waiting on several.
  auto fail = [&](const TensorEntry& entry) {
    handles_.fail(entry.handle, fmt::format("tensor '{}' on rank {}: {}", entry.request.name,
                                            world_.rank, message));
  };
  for (auto& [name, entry] : pending_) fail(entry);
  pending_.clear();
  for (TensorEntry& entry : queued) fail(entry);
}

}  // namespace kolo::core
