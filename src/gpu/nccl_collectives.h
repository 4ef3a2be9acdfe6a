// The NCCL backend's collectives on device memory: what kolo's background thread runs for a group
// of CUDA tensors once negotiation (on the CPU) has agreed on it. Every operation is queued on
// kolo's own stream and returns without waiting for the GPU:
//   1. kolo's stream waits for the caller's event (recorded on the caller's current stream when
//      the tensor was submitted): cudaStreamWaitEvent, never a host wait;
//   2. the collective (fused allreduces through a device-resident fusion buffer, filled and
//      emptied with device-to-device cudaMemcpyAsync);
//   3. a completion event recorded on kolo's stream, which synchronize() makes the caller's
//      stream wait for (stream_waits_for).
// Average is ncclAvg; prescale and postscale are one ncclRedOpCreatePreMulSum (host scalar), so
// kolo runs no kernel of its own. Every CUDA and NCCL return code is checked; an error names the
// rank, the operation and the tensor, and aborts the communicator (a failed NCCL call leaves its
// peers inside the collective). A call that answers ncclInProgress (the communicator is
// non-blocking) is waited for through NcclCommunicator::wait_ready, which aborts on a peer's
// failure seen by kolo's CPU side.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/types.h"
#include "gpu/cuda_runtime.h"
#include "gpu/nccl_communicator.h"

namespace kolo::gpu {

// NCCL's type for a kolo type; nullopt for the ones NCCL lacks (int16, bool, uint64).
std::optional<ncclDataType_t> nccl_type_of(DataType type);

// One tensor on the device: `input` and `output` are device pointers of `bytes` bytes each
// (output may equal input).
struct DeviceTensor {
  std::string name;
  const void* input = nullptr;
  void* output = nullptr;
  size_t bytes = 0;
};

// A reduction as the user asked for it.
struct DeviceReduction {
  ReduceOp op = ReduceOp::sum;
  bool average = false;
  double prescale = 1.0;
  double postscale = 1.0;
};

// An event owned by kolo (cudaEventDestroy when dropped: CUDA releases it once it completed).
class DeviceEvent {
 public:
  DeviceEvent(const CudaRuntime& cuda, cudaEvent_t event) : cuda_(&cuda), event_(event) {}
  DeviceEvent(DeviceEvent&& other) noexcept : cuda_(other.cuda_), event_(other.event_) {
    other.event_ = nullptr;
  }
  DeviceEvent& operator=(DeviceEvent&&) = delete;
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;
  ~DeviceEvent();
  [[nodiscard]] cudaEvent_t get() const { return event_; }

 private:
  const CudaRuntime* cuda_;
  cudaEvent_t event_;
};

// HOROVOD_HIERARCHICAL_ALLREDUCE on CUDA tensors (NcclCollectives::allreduce_hierarchical): NCCL
// inside the host, kolo's own transport across hosts.
struct CrossHostStage {
  NcclCommunicator* host = nullptr;  // the communicator of this host's ranks (local ranks)
  int local_rank = 0;
  int local_size = 1;
  // Every host runs local_size ranks: each local rank carries its shard across hosts. Otherwise
  // local rank 0 of each host carries the whole buffer (Horovod's non-homogeneous case).
  bool homogeneous = true;
  // Allreduces `count` elements in host memory with this rank's peers of the same local index on
  // the other hosts (homogeneous) or with the other hosts' local rank 0, applying the result's
  // scale (Average's division by the job's size, postscale); never called on a rank that
  // carries nothing across.
  std::function<void(std::span<std::byte> host, size_t count)> allreduce;
};

struct NcclCollectivesOptions {
  int rank = 0;
  int size = 1;
  int device = 0;  // the CUDA device of this rank's tensors (cudaSetDevice on kolo's thread)
  PeerWatch watch;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

class NcclCollectives {
 public:
  // Creates kolo's stream (non-blocking) on options.device. `cuda`, `nccl` and `comm` outlive it.
  NcclCollectives(const CudaRuntime& cuda, const NcclLibrary& nccl, NcclCommunicator& comm,
                  NcclCollectivesOptions options);
  ~NcclCollectives();
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  // Step 1: kolo's stream waits for `ready` (the caller's event). `names`: for messages.
  void wait_for_caller(cudaEvent_t ready, const std::vector<std::string>& names);

  // Several tensors are packed into the fusion buffer at 64-byte aligned offsets (as the CPU
  // executor does), reduced with one ncclAllReduce and copied out; one tensor is reduced from
  // its input into its output directly.
  void allreduce(std::span<const DeviceTensor> tensors, DataType type,
                 const DeviceReduction& reduction);
  // Horovod's NCCLHierarchicalAllreduce: ncclReduceScatter inside the host (prescale as a
  // PreMulSum), the shard copied to host memory and allreduced across hosts by
  // `stage.allreduce` (which applies Average and postscale), copied back, ncclAllGather inside
  // the host. Elements beyond a multiple of local_size (all of them on uneven hosts) go by
  // ncclReduce to one local rank, which carries them across, and ncclBroadcast back. The
  // background thread waits (polling, watched) for the shard's copy to the host.
  void allreduce_hierarchical(std::span<const DeviceTensor> tensors, DataType type,
                              const DeviceReduction& reduction, const CrossHostStage& stage);
  void broadcast(const DeviceTensor& tensor, int root);
  // out = every rank's block in rank order. Equal blocks: ncclAllGather; uneven first
  // dimensions: one ncclBroadcast per rank inside one group.
  void allgatherv(const DeviceTensor& tensor, void* out, std::span<const size_t> bytes_per_rank);
  // One ncclSend and one ncclRecv per peer with bytes to move, inside one group.
  void alltoallv(const DeviceTensor& tensor, std::span<const size_t> send_bytes, void* out,
                 std::span<const size_t> recv_bytes);
  // tensor.input holds sum(counts) elements; this rank's block (counts[rank] elements) goes to
  // `out`. Even counts: ncclReduceScatter; uneven: one ncclReduce per rank inside one group.
  void reducescatter(const DeviceTensor& tensor, void* out, std::span<const size_t> counts,
                     DataType type, const DeviceReduction& reduction);

  // `bytes` of zeros in device memory on kolo's stream (a joined rank's part in an allreduce),
  // valid until the next call; the collectives may write into it.
  void* device_zeros(size_t bytes, const std::vector<std::string>& names);

  // Step 3: an event recorded on kolo's stream after everything queued so far.
  DeviceEvent record_completion();

  [[nodiscard]] cudaStream_t stream() const { return stream_; }
  [[nodiscard]] const NcclLibrary& nccl() const { return nccl_; }
  [[nodiscard]] size_t fusion_buffer_bytes() const { return fusion_bytes_; }

 private:
  // NCCL's op for a reduction: a built-in op, or a PreMulSum made for this call and destroyed
  // once the last call using it has returned (as NCCL's documentation allows).
  struct Reduction {
    const NcclLibrary* nccl = nullptr;
    ncclComm_t comm = nullptr;
    ncclRedOp_t op = ncclSum;
    bool created = false;
    Reduction() = default;
    Reduction(const Reduction&) = delete;
    Reduction& operator=(const Reduction&) = delete;
    ~Reduction() {
      if (created) nccl->functions.red_op_destroy(op, comm);
    }
  };
  void select_device(const char* what, const std::vector<std::string>& names);
  void check_cuda_call(cudaError_t error, const char* call, const char* what,
                       const std::vector<std::string>& names);
  // ncclInProgress -> wait_ready; another error aborts the communicator and throws.
  void check_nccl_call(ncclResult_t result, const char* call, const char* what,
                       const std::vector<std::string>& names);
  void check_nccl_call_on(NcclCommunicator& comm, ncclResult_t result, const char* call,
                          const char* what, const std::vector<std::string>& names);
  // The fused input of `tensors`: the tensor itself, or the fusion buffer filled from them
  // (offsets at 64-byte alignment); `count` set to the elements to reduce.
  struct Packed {
    const void* input;
    void* output;
    size_t count;
    std::vector<size_t> offsets;
  };
  Packed pack(std::span<const DeviceTensor> tensors, DataType type,
              const std::vector<std::string>& names);
  void unpack(std::span<const DeviceTensor> tensors, const Packed& packed,
              const std::vector<std::string>& names);
  // NCCL's op on `comm` (of `comm_size` ranks) for `op` with every input multiplied by `factor`
  // first (PreMulSum when factor != 1; then only Sum, a floating-point type and several ranks).
  void make_reduction(Reduction& out, NcclCommunicator& comm, int comm_size, DataType type,
                      ReduceOp op, bool average, double factor,
                      const std::vector<std::string>& names);
  // The host waits (kolo's thread) for everything queued so far on kolo's stream, asking the
  // watch between polls: a peer's failure aborts `comm` and throws PeerError naming the rank.
  void wait_on_host(NcclCommunicator& comm, const char* what,
                    const std::vector<std::string>& names);
  void* fusion_buffer(size_t bytes, const std::vector<std::string>& names);
  ncclDataType_t nccl_type(DataType type, const char* what, const std::vector<std::string>& names);
  void reduce_all(const void* input, void* output, size_t count, DataType type,
                  const DeviceReduction& reduction, const std::vector<std::string>& names);

  const CudaRuntime& cuda_;
  const NcclLibrary& nccl_;
  NcclCommunicator& comm_;
  NcclCollectivesOptions options_;
  cudaStream_t stream_ = nullptr;
  void* fusion_ = nullptr;
  size_t fusion_bytes_ = 0;
  void* zeros_ = nullptr;
  size_t zeros_bytes_ = 0;
  std::vector<std::byte> host_zeros_;
  std::vector<std::byte> host_stage_;  // the hierarchical allreduce's shard in host memory
};

// synchronize() without blocking the host: the caller's stream waits for kolo's `done` event.
// Throws kolo::Error naming the device and the call.
void stream_waits_for(const CudaRuntime& cuda, cudaStream_t caller, cudaEvent_t done, int device);

}  // namespace kolo::gpu
