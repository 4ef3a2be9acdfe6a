// Runs the agreed responses of one cycle on this rank: fuses compatible allreduces into one
// buffer, hands contiguous buffers to the backend, unpacks, applies scale factors and completes
// (or fails) the handles. Everything here runs on the background thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/execution_observer.h"
#include "core/handle_table.h"
#include "core/tensor_entry.h"
#include "fusion/fusion_buffer.h"
#include "fusion/fusion_planner.h"
#include "gpu/nccl_collectives.h"  // gpu::PeerWatch (core may name gpu/ through this header)
#include "kernels/result_scale.h"
#include "negotiation/message.h"

namespace kolo::gpu {
struct CudaRuntime;
struct NcclLibrary;
}  // namespace kolo::gpu

namespace kolo::core {

// The elementwise reduction behind a user's op (Average reduces as a sum, then scales); throws
// InvalidArgument for Adasum, which is not elementwise.
ReduceOp to_comm_op(negotiation::UserReduceOp op);

struct ExecutorOptions {
  int rank = 0;
  int size = 1;
  uint64_t fusion_threshold = 128ull << 20;
};

// Counters for tests and logs.
struct ExecutorStats {
  uint64_t responses = 0;
  uint64_t fused_groups = 0;   // backend calls for allreduce
  uint64_t fused_tensors = 0;  // tensors that shared a backend call with another
};

// The libraries of the NCCL path (executor_device.cc); null: the process's own
// (gpu::cuda_runtime(), gpu::nccl_library()). Tests give fakes.
struct DeviceLibraries {
  const gpu::CudaRuntime* cuda = nullptr;
  const gpu::NcclLibrary* nccl = nullptr;
};

// HOROVOD_HIERARCHICAL_ALLREDUCE for CUDA tensors (executor_device.cc): NCCL among this host's
// ranks of the process set, kolo's CPU transport across hosts. Set by the process set where its
// ranks span several hosts and some host runs several of them.
struct DeviceHierarchy {
  int local_rank = 0;  // this rank's place among the set's ranks on its host
  int local_size = 1;
  bool homogeneous = true;  // every host runs local_size of the set's ranks
  // Sends local rank 0's bytes to the host's ranks (the host communicator's NCCL unique id).
  gpu::BroadcastFromRankZero share_host_id;
  // Allreduces host memory with this rank's cross-host peers, applying `scale` to the totals;
  // null on a rank that carries nothing across (not local rank 0 of an uneven host).
  std::function<void(Bytes data, size_t count, DataType type, ReduceOp op,
                     const kernels::ResultScale& scale)>
      cross_allreduce;
};

class Executor {
 public:
  Executor(backends::Backend& backend, HandleTable& handles, ExecutorOptions options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // `pending` maps tensor name -> entry; executed entries are removed from it and their handles
  // completed or failed. An op the backend lacks (UnsupportedOperation) or a bad argument fails
  // only its tensors; transport failures propagate (they are fatal for the session).
  void run(const std::vector<negotiation::Response>& responses,
           std::map<std::string, TensorEntry>& pending);

  [[nodiscard]] const ExecutorStats& stats() const { return stats_; }
  // Hooks for core/observability.h: the timeline (may be null) and autotune's threshold.
  void set_observer(ExecutionObserver* observer) { observer_ = observer; }
  void set_fusion_threshold(uint64_t bytes) { options_.fusion_threshold = bytes; }
  void set_device_libraries(DeviceLibraries libraries) { device_libraries_ = libraries; }
  // An elastic reset or a peer's failure: the NCCL communicator is aborted and dropped; the next
  // CUDA group makes a new one through the (new) ranks' rendezvous.
  void drop_device_state();
  // CUDA allreduces run hierarchically from now on (null: flat, one NCCL communicator).
  void set_device_hierarchy(std::shared_ptr<const DeviceHierarchy> hierarchy) {
    device_hierarchy_ = std::move(hierarchy);
  }
  // kolo's CPU view of a peer's failure, asked while an NCCL call is in progress (creating the
  // communicator, a non-blocking collective), and how long such a call may stay in progress: a
  // failure or the timeout aborts the communicator and raises PeerError / Error naming the rank.
  void set_device_watch(gpu::PeerWatch watch, std::chrono::milliseconds timeout) {
    device_watch_ = std::move(watch);
    device_timeout_ = timeout;
  }

 private:
  void execute(const fusion::FusedGroup& group, std::map<std::string, TensorEntry>& pending);
  // Fails the handles of `names` still pending with `error` and drops them.
  // The asynchronous host path: waits (on this thread) for the device-to-host copies of the
  // entries that carry a ready_event, before any of their bytes is read.
  void wait_for_device_copies(const std::vector<std::string>& names,
                              std::map<std::string, TensorEntry>& pending);
  void fail_all(const std::vector<std::string>& names, const std::string& error,
                std::map<std::string, TensorEntry>& pending);
  // The one copy / prescale / backend op / postscale path of every reducing op (allreduce,
  // fused or not, Adasum, reducescatter): `input` is copied into `work` unless it is empty
  // (already staged) or already there; prescale scales `work`, postscale scales `result` and
  // Average divides it (`work` itself, or the op's separate output). `phase`, when set, brackets
  // the backend op and postscale on the timeline.
  struct ScaledRun {
    std::span<const std::byte> input;
    std::span<std::byte> work;
    std::span<std::byte> result;
    const char* phase = nullptr;
    bool backend_scales = false;  // the backend op applies the scale it is given to `result`
  };
  // Average's division and the postscale of `response` on this executor's ranks.
  [[nodiscard]] kernels::ResultScale result_scale(const negotiation::Response& response) const;
  // input -> work, prescale, backend_op(scale), then the scale on `result` unless the op did.
  void run_scaled(const negotiation::Response& response, const ScaledRun& run,
                  const std::function<void(const kernels::ResultScale&)>& backend_op);

  void allreduce(const fusion::FusedGroup& group, std::vector<TensorEntry*>& entries);
  // A fused group straight from its tensors where the backend reduces pieces; false: not taken.
  bool allreduce_pieces(const negotiation::Response& response, std::vector<TensorEntry*>& entries);
  void count_fused(size_t tensors) {
    ++stats_.fused_groups;
    stats_.fused_tensors += tensors;
  }
  // executor_device.cc: a group of CUDA tensors through NCCL on kolo's stream; sets each entry's
  // completion event (allocated_output.device_done).
  struct DeviceState;
  void execute_on_device(const fusion::FusedGroup& group,
                         std::map<std::string, TensorEntry>& pending);
  DeviceState& device_state(int device);
  // The GPU a joined rank's zeros live on for the CUDA allreduce of `tensor`: `join_device`
  // (hvd.join(device); -1: none) or the GPU of its earlier CUDA ops; throws Error when it has
  // neither, or when the two differ.
  [[nodiscard]] int joined_rank_device(int join_device, const std::string& tensor) const;
  // executor_device_outputs.cc: allgather, alltoall and reducescatter of CUDA tensors, whose
  // outputs the front end allocates (TensorEntry::device_allocator) once the sizes are agreed.
  struct DeviceOutput {
    std::vector<int64_t> shape;  // the agreed shape of this rank's output
    size_t bytes = 0;
    void* data = nullptr;                  // from the allocator
    std::uintptr_t ready_event = 0;        // the allocator's stream, for kolo's stream to wait on
    std::vector<size_t> per_rank;          // allgather, alltoall: bytes from each rank;
                                           // reducescatter: elements of each rank's block
    std::vector<size_t> send;              // alltoall: bytes sent to each rank
    std::vector<int64_t> received_splits;  // alltoall: rows from each rank
  };
  [[nodiscard]] std::vector<DeviceOutput> plan_device_outputs(
      const negotiation::Response& response, const std::vector<TensorEntry*>& entries) const;
  // Asks every entry's allocator, then (np > 1) the ranks agree that all outputs exist before
  // NCCL runs; a failure anywhere throws InvalidArgument on every rank, naming the rank.
  void allocate_device_outputs(const negotiation::Response& response,
                               const std::vector<TensorEntry*>& entries,
                               std::vector<DeviceOutput>& plans);
  // allreduce (fused) and broadcast, on the caller's own memory.
  void run_in_place_on_device(const negotiation::Response& response,
                              const std::vector<TensorEntry*>& entries, gpu::NcclCollectives& ops);
  // HOROVOD_HIERARCHICAL_ALLREDUCE (device_hierarchy_): the host's NCCL communicator, made at
  // the first call, and kolo's CPU allreduce across hosts.
  void allreduce_hierarchical_on_device(const negotiation::Response& response,
                                        std::span<const gpu::DeviceTensor> tensors);
  void run_with_device_outputs(const negotiation::Response& response,
                               const std::vector<TensorEntry*>& entries, gpu::NcclCollectives& ops);
  void allgather(const negotiation::Response& response, TensorEntry& entry, size_t index);
  void broadcast(const negotiation::Response& response, TensorEntry& entry);
  // executor_ops.cc
  void adasum(const negotiation::Response& response, TensorEntry& entry);
  void reducescatter(const negotiation::Response& response, TensorEntry& entry);
  void alltoall(const negotiation::Response& response, TensorEntry& entry, size_t index);

  backends::Backend& backend_;
  HandleTable& handles_;
  ExecutorOptions options_;
  fusion::FusionBuffer fusion_buffer_;
  ExecutorStats stats_;
  ExecutionObserver* observer_ = nullptr;
  uint64_t groups_started_ = 0;
  DeviceLibraries device_libraries_;
  gpu::PeerWatch device_watch_;
  std::chrono::milliseconds device_timeout_{std::chrono::minutes(5)};
  std::unique_ptr<DeviceState> device_;
  std::shared_ptr<const DeviceHierarchy> device_hierarchy_;
};

}  // namespace kolo::core
