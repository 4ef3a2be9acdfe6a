// The executor's NCCL path: a group of CUDA tensors (the response's device is cuda) runs through
// gpu::NcclCollectives on kolo's own stream. The background thread only queues work: kolo's
// stream waits for each tensor's caller event, the collective runs, and a completion event is
// recorded and handed to the front end with the handle (OwnedBuffer::device_done), which makes
// the caller's stream wait for it. The communicator is made at the first CUDA group, through
// rank 0's unique id sent over kolo's own links (the backend's broadcast: every rank of the
// process set reaches that group in the same order, so the broadcast matches).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "base/errors.h"
#include "core/executor.h"
#include "gpu/nccl_collectives.h"

namespace kolo::core {

struct Executor::DeviceState {
  DeviceState(int device_index, gpu::NcclCommunicator communicator, const gpu::CudaRuntime& cuda,
              const gpu::NcclLibrary& nccl, gpu::NcclCollectivesOptions options)
      : device(device_index),
        comm(std::move(communicator)),
        ops(cuda, nccl, comm, std::move(options)) {}
  // Abort first: the collectives' destructor frees the fusion buffer (cudaFree waits for the
  // device), which would wait forever for a collective whose peer died.
  ~DeviceState() {
    comm.abort();
    if (host_comm) host_comm->abort();
  }
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;
  int device;
  gpu::NcclCommunicator comm;  // declared before ops, which keeps a reference to it
  gpu::NcclCollectives ops;
  // The host's communicator of the hierarchical allreduce, made at its first use.
  std::optional<gpu::NcclCommunicator> host_comm;
};

// Here, where DeviceState is complete (the header only names it).
Executor::Executor(backends::Backend& backend, HandleTable& handles, ExecutorOptions options)
    : backend_(backend), handles_(handles), options_(options) {}
Executor::~Executor() = default;

// A new session (elastic reset: shutdown, then init) makes new executors, so it drops this too.
void Executor::drop_device_state() { device_.reset(); }

Executor::DeviceState& Executor::device_state(int device) {
  if (device_ != nullptr) {
    if (device_->device == device) return *device_;
    throw InvalidArgument(
        fmt::format("rank {}: CUDA tensors on device {} after device {}: kolo's NCCL path uses "
                    "one GPU per rank (torch.cuda.set_device(hvd.local_rank()))",
                    options_.rank, device, device_->device));
  }
  const gpu::CudaRuntime& cuda =
      device_libraries_.cuda != nullptr ? *device_libraries_.cuda : gpu::cuda_runtime();
  const gpu::NcclLibrary& nccl =
      device_libraries_.nccl != nullptr ? *device_libraries_.nccl : gpu::nccl_library();
  gpu::NcclCommunicator comm = gpu::rendezvous_communicator(
      nccl, options_.rank, options_.size,
      [this](std::span<std::byte> id) { backend_.broadcast(id, 0); }, device_watch_,
      device_timeout_);
  device_ = std::make_unique<DeviceState>(device, std::move(comm), cuda, nccl,
                                          gpu::NcclCollectivesOptions{.rank = options_.rank,
                                                                      .size = options_.size,
                                                                      .device = device,
                                                                      .watch = device_watch_,
                                                                      .timeout = device_timeout_});
  return *device_;
}

int Executor::joined_rank_device(int join_device, const std::string& tensor) const {
  if (device_ == nullptr) {
    if (join_device >= 0) return join_device;  // its communicator is made on that GPU now
    throw Error(fmt::format(
        "rank {}: joined, it has no GPU to take part with zeros in the CUDA allreduce of '{}' "
        "(kolo uses the GPU of the rank's earlier CUDA operations; this rank ran none: "
        "hvd.join(device) names one, e.g. hvd.join(hvd.local_rank()))",
        options_.rank, tensor));
  }
  // kolo's NCCL path has one GPU per rank (device_state): zeros on another GPU could not take
  // part through this rank's communicator, so a different device is the caller's mistake. Only
  // this rank knows it (its peers run the allreduce): an Error, which ends the session, not an
  // InvalidArgument, which fails these tensors as if every rank had decided it.
  if (join_device >= 0 && join_device != device_->device) {
    throw Error(fmt::format(
        "rank {}: hvd.join(device={}) for the CUDA allreduce of '{}', but this rank's CUDA "
        "operations ran on device {}: kolo's NCCL path uses one GPU per rank (pass {} or -1)",
        options_.rank, join_device, tensor, device_->device, device_->device));
  }
  return device_->device;
}

void Executor::execute_on_device(const fusion::FusedGroup& group,
                                 std::map<std::string, TensorEntry>& pending) {
  const negotiation::Response& response = group.response;
  std::vector<TensorEntry*> entries;
  for (const auto& name : response.names) {
    auto it = pending.find(name);
    if (it == pending.end()) {
      throw Error("internal error: response names tensor '" + name +
                  "' that this rank never submitted");
    }
    entries.push_back(&it->second);
  }
  const bool reducing = response.op == negotiation::OpType::allreduce &&
                        response.reduce_op != negotiation::UserReduceOp::adasum;
  const bool allocating = response.op == negotiation::OpType::allgather ||
                          response.op == negotiation::OpType::alltoall ||
                          response.op == negotiation::OpType::reducescatter;
  if (!reducing && !allocating && response.op != negotiation::OpType::broadcast) {
    // The front end (kolo/torch/gpu_path.py) sends these through host memory; reaching here is a
    // caller that bypassed it. Decided on every rank alike, before any byte moved.
    throw UnsupportedOperation(
        fmt::format("rank {}: {} of CUDA tensor '{}': this version's NCCL path runs allreduce, "
                    "broadcast, allgather, alltoall and reducescatter; the others take the "
                    "asynchronous host path",
                    options_.rank, negotiation::op_type_name(response.op), response.names.front()));
  }
  // A joined rank's stand-ins (ProcessSet::add_joined_stand_ins: zeros in host memory, no
  // handle) take part in its peers' CUDA allreduce with zeros in device memory: on the device
  // hvd.join(device) named (the stand-ins' device_index; -1: none), else on the GPU this rank's
  // earlier CUDA ops used.
  std::vector<TensorEntry*> stand_ins;
  int device = -1;
  int join_device = -1;
  for (TensorEntry* entry : entries) {
    if (entry->handle == kNoHandle && entry->request.device != negotiation::DeviceKind::cuda) {
      stand_ins.push_back(entry);
      join_device = std::max(join_device, entry->request.device_index);
    } else if (device < 0) {
      device = entry->request.device_index;
    }
  }
  if (device < 0) device = joined_rank_device(join_device, response.names.front());
  DeviceState& state = device_state(device);
  if (!stand_ins.empty()) {
    size_t bytes = 0;
    for (const TensorEntry* entry : stand_ins) bytes = std::max(bytes, entry->bytes());
    void* zeros = state.ops.device_zeros(bytes, response.names);
    for (TensorEntry* entry : stand_ins) {
      entry->input = zeros;
      entry->output = zeros;  // the result is dropped; the next use refills the zeros
    }
  }
  {
    ObservedPhase phase(observer_, response.names, "WAIT_FOR_DATA");
    for (const TensorEntry* entry : entries) {
      if (entry->caller_event != 0) {
        // NOLINTNEXTLINE(performance-no-int-to-ptr): the event travels from Python as an integer
        state.ops.wait_for_caller(reinterpret_cast<gpu::cudaEvent_t>(entry->caller_event),
                                  response.names);
      }
    }
  }
  if (allocating) {
    run_with_device_outputs(response, entries, state.ops);
  } else {
    run_in_place_on_device(response, entries, state.ops);
  }
  // One completion event for the group, shared by its handles; the last one drops it.
  auto done = std::make_shared<gpu::DeviceEvent>(state.ops.record_completion());
  for (TensorEntry* entry : entries) {
    entry->allocated_output.device_done = reinterpret_cast<std::uintptr_t>(done->get());
    entry->allocated_output.device_done_owner = done;
  }
}

void Executor::run_in_place_on_device(const negotiation::Response& response,
                                      const std::vector<TensorEntry*>& entries,
                                      gpu::NcclCollectives& ops) {
  const bool reducing = response.op == negotiation::OpType::allreduce;
  std::vector<gpu::DeviceTensor> tensors;
  for (const TensorEntry* entry : entries) {
    tensors.push_back({entry->request.name, entry->input, entry->output, entry->bytes()});
  }
  if (reducing && device_hierarchy_ != nullptr) {
    ObservedPhase phase(observer_, response.names, "NCCL_HIERARCHICAL_ALLREDUCE");
    allreduce_hierarchical_on_device(response, tensors);
    if (tensors.size() > 1) count_fused(tensors.size());
  } else if (reducing) {
    ObservedPhase phase(observer_, response.names, "NCCL_ALLREDUCE");
    ops.allreduce(tensors, response.dtype,
                  {.op = to_comm_op(response.reduce_op),
                   .average = response.reduce_op == negotiation::UserReduceOp::average,
                   .prescale = response.prescale,
                   .postscale = response.postscale});
    if (tensors.size() > 1) count_fused(tensors.size());
  } else {
    ObservedPhase phase(observer_, response.names, "NCCL_BROADCAST");
    for (const gpu::DeviceTensor& tensor : tensors) ops.broadcast(tensor, response.root);
  }
}

void Executor::allreduce_hierarchical_on_device(const negotiation::Response& response,
                                                std::span<const gpu::DeviceTensor> tensors) {
  const DeviceHierarchy& hierarchy = *device_hierarchy_;
  DeviceState& state = *device_;
  const kernels::ResultScale scale = result_scale(response);
  scale.check(response.dtype);  // before any byte moves
  if (!state.host_comm) {
    // Every rank of the host reaches its first hierarchical allreduce in the same response.
    state.host_comm.emplace(
        gpu::rendezvous_communicator(state.ops.nccl(), hierarchy.local_rank, hierarchy.local_size,
                                     hierarchy.share_host_id, device_watch_, device_timeout_));
  }
  const ReduceOp op = to_comm_op(response.reduce_op);
  const DataType type = response.dtype;
  gpu::CrossHostStage stage{.host = &*state.host_comm,
                            .local_rank = hierarchy.local_rank,
                            .local_size = hierarchy.local_size,
                            .homogeneous = hierarchy.homogeneous,
                            .allreduce = {}};
  if (hierarchy.cross_allreduce) {
    stage.allreduce = [&](std::span<std::byte> data, size_t count) {
      hierarchy.cross_allreduce(data, count, type, op, scale);
    };
  }
  state.ops.allreduce_hierarchical(
      tensors, type,
      {.op = op,
       .average = response.reduce_op == negotiation::UserReduceOp::average,
       .prescale = response.prescale,
       .postscale = response.postscale},
      stage);
}

}  // namespace kolo::core
