// HOROVOD_HIERARCHICAL_ALLREDUCE on CUDA tensors, as Horovod's NCCLHierarchicalAllreduce: NCCL
// inside the host (NVLink), kolo's own transport across hosts, each byte crossing the network
// once per host instead of once per rank.
//
// Homogeneous hosts (L ranks each): the fused buffer's first L*k elements are reduce-scattered
// inside the host (local rank i keeps shard i), shard i is allreduced with the local rank i of
// every other host, and allgathered back inside the host; the last count % L elements are
// reduced to local rank L-1 (ncclReduce), which carries them across with its shard, and
// broadcast back. Uneven hosts: everything goes the second way, through local rank 0.
//
// The cross-host step stages the shard through host memory (a buffer kolo keeps, pageable: the
// runtime's table has no pinned allocation, and Horovod mallocs it too): a device-to-host copy
// on kolo's stream, which kolo's background thread waits for (never the caller's thread), the
// CPU allreduce (which applies Average's division and postscale to the totals), and a
// host-to-device copy that CUDA stages before it returns, so the buffer may be reused at once.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <thread>

#include "base/clock.h"
#include "base/errors.h"
#include "gpu/nccl_collectives.h"

namespace kolo::gpu {

namespace {

constexpr auto kHostWaitPoll = std::chrono::microseconds(50);

}  // namespace

void NcclCollectives::wait_on_host(NcclCommunicator& comm, const char* what,
                                   const std::vector<std::string>& names) {
  DeviceEvent copied = record_completion();
  const Deadline deadline{options_.timeout};
  for (;;) {
    const cudaError_t state = cuda_.functions.event_query(copied.get());
    if (state == kCudaSuccess) return;
    if (state != kCudaErrorNotReady) check_cuda_call(state, "cudaEventQuery", what, names);
    // A peer that died inside the reduce-scatter leaves the copy waiting for ever.
    if (options_.watch) {
      if (std::optional<PeerFailure> failure = options_.watch()) {
        comm.abort();
        throw PeerError(failure->rank,
                        fmt::format("rank {}: {} of tensors '{}': {}; the NCCL communicator was "
                                    "aborted",
                                    options_.rank, what, fmt::join(names, "', '"), failure->what));
      }
    }
    if (deadline.expired()) {
      comm.abort();
      throw Error(
          fmt::format("rank {}: {} of tensors '{}': not done after {} ms; the NCCL "
                      "communicator was aborted",
                      options_.rank, what, fmt::join(names, "', '"), options_.timeout.count()));
    }
    std::this_thread::sleep_for(kHostWaitPoll);
  }
}

void NcclCollectives::allreduce_hierarchical(std::span<const DeviceTensor> tensors, DataType type,
                                             const DeviceReduction& reduction,
                                             const CrossHostStage& stage) {
  std::vector<std::string> names;
  for (const DeviceTensor& tensor : tensors) names.push_back(tensor.name);
  const bool carries = stage.homogeneous || stage.local_rank == 0;
  if (stage.host == nullptr || (carries && !stage.allreduce)) {
    throw Error(
        fmt::format("rank {}: hierarchical allreduce of tensors '{}' without its host "
                    "communicator or cross-host step",
                    options_.rank, fmt::join(names, "', '")));
  }
  const ncclDataType_t nccl_data = nccl_type(type, "allreduce", names);
  if ((reduction.prescale != 1.0 || reduction.postscale != 1.0) &&
      (reduction.op != ReduceOp::sum || !is_floating(type))) {
    throw InvalidArgument(fmt::format(
        "rank {}: allreduce of tensors '{}': the NCCL path applies prescale/postscale to a "
        "floating-point Sum or Average only, not to {} of {}",
        options_.rank, fmt::join(names, "', '"), reduce_op_name(reduction.op), dtype_name(type)));
  }
  NcclCommunicator& host = *stage.host;
  select_device("allreduce", names);
  const Packed packed = pack(tensors, type, names);
  const size_t element = dtype_size(type);
  const auto local_size = static_cast<size_t>(stage.local_size);
  const auto local_rank = static_cast<size_t>(stage.local_rank);
  const size_t per_rank = stage.homogeneous ? packed.count / local_size : 0;
  const size_t remaining = packed.count - per_rank * local_size;
  const int root = stage.homogeneous ? stage.local_size - 1 : 0;
  const bool is_root = stage.local_rank == root;
  const auto* input = static_cast<const std::byte*>(packed.input);
  auto* output = static_cast<std::byte*>(packed.output);
  std::byte* shard = output + per_rank * local_rank * element;
  std::byte* rest = output + per_rank * local_size * element;
  {
    // Sum inside the host, prescale as a PreMulSum; Average and postscale come with the totals.
    Reduction op;
    make_reduction(op, host, stage.local_size, type, reduction.op, false, reduction.prescale,
                   names);
    if (per_rank > 0) {
      check_nccl_call_on(host,
                         nccl_.functions.reduce_scatter(input, shard, per_rank, nccl_data, op.op,
                                                        host.get(), stream_),
                         "ncclReduceScatter", "hierarchical allreduce", names);
    }
    if (remaining > 0) {
      check_nccl_call_on(
          host,
          nccl_.functions.reduce(input + per_rank * local_size * element, rest, remaining,
                                 nccl_data, op.op, root, host.get(), stream_),
          "ncclReduce", "hierarchical allreduce", names);
    }
  }
  if (stage.homogeneous || is_root) {
    // The root's shard and the rest are adjacent: it carries both in one allreduce.
    const size_t count = per_rank + (is_root ? remaining : 0);
    const size_t bytes = count * element;
    if (host_stage_.size() < bytes) host_stage_.resize(bytes);
    check_cuda_call(
        cuda_.functions.memcpy_async(host_stage_.data(), shard, bytes, kCudaMemcpyDefault, stream_),
        "cudaMemcpyAsync to host memory", "hierarchical allreduce", names);
    wait_on_host(host, "hierarchical allreduce", names);
    stage.allreduce(std::span<std::byte>(host_stage_.data(), bytes), count);
    check_cuda_call(
        cuda_.functions.memcpy_async(shard, host_stage_.data(), bytes, kCudaMemcpyDefault, stream_),
        "cudaMemcpyAsync from host memory", "hierarchical allreduce", names);
  }
  if (per_rank > 0) {
    check_nccl_call_on(
        host, nccl_.functions.all_gather(shard, output, per_rank, nccl_data, host.get(), stream_),
        "ncclAllGather", "hierarchical allreduce", names);
  }
  if (remaining > 0) {
    check_nccl_call_on(
        host,
        nccl_.functions.broadcast(rest, rest, remaining, nccl_data, root, host.get(), stream_),
        "ncclBroadcast", "hierarchical allreduce", names);
  }
  unpack(tensors, packed, names);
}

}  // namespace kolo::gpu
