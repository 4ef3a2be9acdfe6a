#include "core/process_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "base/errors.h"
#include "comm/subgroup.h"
#include "core/device_hierarchy.h"
#include "core/observability.h"

namespace kolo::core {

namespace {

comm::Communicator& set_communicator(int32_t id, const std::vector<int>& ranks,
                                     comm::Communicator& world,
                                     std::unique_ptr<comm::Communicator>& own) {
  if (id == kGlobalProcessSet) return world;
  own = std::make_unique<comm::Communicator>(comm::subgroup(world, ranks));
  return *own;
}

// kolo's CPU view of a dead peer, for the NCCL path's waits (Executor::set_device_watch): a
// look at the set's links for a hang-up, touching no link's state (the NCCL wait runs on the
// background thread, inside a cycle). Any hang-up counts, even after the peer's last bytes: the
// NCCL collective needs that peer alive.
gpu::PeerWatch peer_watch(const comm::Communicator& comm) {
  return [&comm]() -> std::optional<gpu::PeerFailure> {
    std::optional<PeerError> hung_up = comm.hung_up_peer();
    if (!hung_up) return std::nullopt;
    return gpu::PeerFailure{hung_up->peer_rank(), hung_up->what()};
  };
}

}  // namespace

ProcessSet::ProcessSet(int32_t id, std::vector<int> ranks, comm::Communicator& world,
                       const Config& config, const BackendFactory& make_backend,
                       HandleTable& handles, const Logger& logger)
    : id_(id), ranks_(std::move(ranks)), comm_(set_communicator(id_, ranks_, world, own_comm_)) {
  negotiation::ControllerOptions controller_options;
  controller_options.cache_capacity = config.cache_capacity;
  controller_options.stalled_cached_after = Observability::resend_cached_after(config);
  controller_ = std::make_unique<negotiation::Controller>(comm_, controller_options, logger);
  backend_ = make_backend(comm_);
  executor_ = std::make_unique<Executor>(
      *backend_, handles, ExecutorOptions{comm_.rank(), comm_.size(), config.fusion_threshold});
  // A dead peer ends an NCCL wait at once; a silent one within the CPU's peer timeout.
  executor_->set_device_watch(peer_watch(comm_), config.peer_timeout);
  executor_->set_device_hierarchy(device_hierarchy(comm_, config.hierarchical_allreduce));
  if (id_ != kGlobalProcessSet && comm_.rank() == 0 && config.stall_check) {
    stall_.emplace(StallSettings{config.stall_warning_time, config.stall_shutdown_time});
  }
}

void ProcessSet::execute(const std::vector<negotiation::Response>& responses, bool joined,
                         int join_device) {
  if (joined) add_joined_stand_ins(responses, join_device);
  executor_->run(responses, pending_);
}

void ProcessSet::inspect_stalls(const Logger& logger) {
  if (!stall_ || !stall_->due(Clock::now())) return;
  // The coordinator numbers the set's members 0..k-1; messages name job ranks.
  std::vector<negotiation::PendingTensor> pending = controller_->coordinator_pending();
  for (auto& tensor : pending) {
    for (int& r : tensor.missing) r = ranks_[static_cast<size_t>(r)];
    for (int& r : tensor.submitted) r = ranks_[static_cast<size_t>(r)];
  }
  StallReport report = stall_->inspect(pending, Clock::now());
  if (!report.warning.empty()) logger.warn("process set {}: {}", id_, report.warning);
  for (const auto& [name, message] : report.cancel) {
    logger.error("stall shutdown: cancelling tensor '{}' of process set {} on its ranks", name,
                 id_);
    controller_->cancel(name, fmt::format("process set {}: {}", id_, message));
  }
}

void ProcessSet::add_joined_stand_ins(const std::vector<negotiation::Response>& responses,
                                      int join_device) {
  // A joined rank contributes zeros (Horovod's semantics) to every allreduce the other ranks
  // run; the coordinator sent the shape along because this rank never submitted the tensor. The
  // stand-in owns its zeros and has no handle, so nobody is told when it completes.
  using negotiation::OpType;
  for (const negotiation::Response& response : responses) {
    if (!response.error.empty()) continue;
    if (response.op != OpType::allreduce && response.op != OpType::barrier) continue;
    for (const std::string& name : response.names) {
      if (pending_.contains(name)) continue;
      TensorEntry entry;
      entry.request.name = name;
      entry.request.op = response.op;
      entry.request.dtype = response.dtype;
      entry.request.shape =
          response.op == OpType::allreduce ? response.shape : std::vector<int64_t>{0};
      entry.handle = kNoHandle;
      // Host zeros still (request.device stays cpu); on a CUDA allreduce the executor puts them on
      // this device (Executor::joined_rank_device).
      entry.request.device_index = join_device;
      const size_t bytes = std::max<size_t>(entry.bytes(), 1);
      entry.allocated_output.data = std::shared_ptr<std::byte[]>(new std::byte[bytes]());
      entry.allocated_output.bytes = bytes;
      entry.input = entry.allocated_output.data.get();
      entry.output = entry.allocated_output.data.get();
      pending_.emplace(name, std::move(entry));
    }
  }
}

}  // namespace kolo::core
