#include "gpu/nccl_collectives.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "base/errors.h"
#include "kernels/half_bits.h"

namespace kolo::gpu {

namespace {

// Fused tensors start at 64-byte aligned offsets, as in the CPU executor's fusion buffer.
constexpr size_t kFusionAlignment = 64;

size_t aligned(size_t bytes) {
  return (bytes + kFusionAlignment - 1) / kFusionAlignment * kFusionAlignment;
}

std::string tensors_text(const std::vector<std::string>& names) {
  if (names.size() == 1) return fmt::format("tensor '{}'", names.front());
  return fmt::format("tensors '{}'", fmt::join(names, "', '"));
}

ncclRedOp_t nccl_op_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::product:
      return ncclProd;
    default:
      break;
  }
  throw UnsupportedOperation(
      fmt::format("the NCCL path cannot reduce with {}", reduce_op_name(op)));
}

// NCCL's op for an unscaled reduction. Alone (one rank) an Average is the tensor itself: ncclSum,
// which NCCL runs as a copy. NCCL 2.28.9's one-rank out-of-place ncclAvg (a kernel with a
// scalar, as PreMulSum) left the last element of a 4913-element float32 buffer unwritten on an
// H200, through kolo and through CuPy without kolo (session 33; in place it was right).
ncclRedOp_t plain_op(const DeviceReduction& reduction, int size) {
  if (!reduction.average) return nccl_op_of(reduction.op);
  return size == 1 ? ncclSum : ncclAvg;
}

}  // namespace

std::optional<ncclDataType_t> nccl_type_of(DataType type) {
  switch (type) {
    case DataType::uint8:
      return ncclUint8;
    case DataType::int8:
      return ncclInt8;
    case DataType::int32:
      return ncclInt32;
    case DataType::int64:
      return ncclInt64;
    case DataType::float16:
      return ncclFloat16;
    case DataType::bfloat16:
      return ncclBfloat16;
    case DataType::float32:
      return ncclFloat32;
    case DataType::float64:
      return ncclFloat64;
    default:
      return std::nullopt;  // int16, bool, uint64: NCCL has no such type
  }
}

DeviceEvent::~DeviceEvent() {
  // cudaEventDestroy of an event still pending returns at once; CUDA frees it once it completed.
  if (event_ != nullptr) cuda_->functions.event_destroy(event_);
}

NcclCollectives::NcclCollectives(const CudaRuntime& cuda, const NcclLibrary& nccl,
                                 NcclCommunicator& comm, NcclCollectivesOptions options)
    : cuda_(cuda), nccl_(nccl), comm_(comm), options_(std::move(options)) {
  const std::string where =
      fmt::format("rank {}: the NCCL backend on CUDA device {}", options_.rank, options_.device);
  if (!cuda_.status.loaded) throw Error(fmt::format("{}: {}", where, cuda_.status.reason));
  if (!nccl_.status.loaded) throw Error(fmt::format("{}: {}", where, nccl_.status.reason));
  select_device("creating kolo's stream", {});
  check_cuda_call(cuda_.functions.stream_create_with_flags(&stream_, kCudaStreamNonBlocking),
                  "cudaStreamCreateWithFlags", "creating kolo's stream", {});
}

NcclCollectives::~NcclCollectives() {
  // Nothing may still use the fusion buffer or the stream: their last user was waited for by the
  // completion events the caller's streams hold. cudaFree synchronizes the device itself.
  if (fusion_ != nullptr) cuda_.functions.free(fusion_);
  if (zeros_ != nullptr) cuda_.functions.free(zeros_);
  if (stream_ != nullptr) cuda_.functions.stream_destroy(stream_);
}

void NcclCollectives::check_cuda_call(cudaError_t error, const char* call, const char* what,
                                      const std::vector<std::string>& names) {
  if (error == kCudaSuccess) return;
  const char* text = cuda_.functions.get_error_string(error);
  throw Error(fmt::format("rank {}: {}{}: {} failed on CUDA device {}: {} (cudaError_t {})",
                          options_.rank, what,
                          names.empty() ? "" : fmt::format(" of {}", tensors_text(names)), call,
                          options_.device, text != nullptr ? text : "CUDA error", error));
}

void NcclCollectives::check_nccl_call(ncclResult_t result, const char* call, const char* what,
                                      const std::vector<std::string>& names) {
  check_nccl_call_on(comm_, result, call, what, names);
}

void NcclCollectives::check_nccl_call_on(NcclCommunicator& comm, ncclResult_t result,
                                         const char* call, const char* what,
                                         const std::vector<std::string>& names) {
  if (result == ncclSuccess) return;
  const std::string context = fmt::format("{} of {}", what, tensors_text(names));
  if (result == ncclInProgress) {
    // A non-blocking communicator still working on the call: wait_ready polls it, and aborts it
    // (PeerError naming the rank) if a peer fails meanwhile.
    comm.wait_ready(options_.watch, options_.timeout, context.c_str());
    return;
  }
  const char* last = nccl_.functions.get_last_error(comm.get());
  const std::string message =
      fmt::format("rank {}: {}: {} failed: {}{}; the NCCL communicator was aborted", options_.rank,
                  context, call, nccl_error_text(nccl_, result),
                  last != nullptr && *last != '\0' ? fmt::format(" ({})", last) : "");
  comm.abort();  // the peers are inside the same collective: only an abort releases them
  throw Error(message);
}

void NcclCollectives::select_device(const char* what, const std::vector<std::string>& names) {
  // kolo's background thread may run on any device's context otherwise (device 0 by default).
  check_cuda_call(cuda_.functions.set_device(options_.device), "cudaSetDevice", what, names);
}

ncclDataType_t NcclCollectives::nccl_type(DataType type, const char* what,
                                          const std::vector<std::string>& names) {
  const std::optional<ncclDataType_t> nccl_type = nccl_type_of(type);
  if (!nccl_type) {
    throw InvalidArgument(fmt::format("rank {}: {} of {}: NCCL has no {} type", options_.rank, what,
                                      tensors_text(names), dtype_name(type)));
  }
  return *nccl_type;
}

void* NcclCollectives::fusion_buffer(size_t bytes, const std::vector<std::string>& names) {
  if (bytes <= fusion_bytes_) return fusion_;
  if (fusion_ != nullptr) {
    // cudaFree waits for the device: earlier work on the old buffer has finished before it goes.
    check_cuda_call(cuda_.functions.free(fusion_), "cudaFree", "growing the fusion buffer", names);
    fusion_ = nullptr;
    fusion_bytes_ = 0;
  }
  check_cuda_call(cuda_.functions.malloc(&fusion_, bytes), "cudaMalloc",
                  "allocating the fusion buffer", names);
  fusion_bytes_ = bytes;
  return fusion_;
}

void* NcclCollectives::device_zeros(size_t bytes, const std::vector<std::string>& names) {
  select_device("a joined rank's zeros", names);
  if (bytes > zeros_bytes_) {
    if (zeros_ != nullptr) {
      check_cuda_call(cuda_.functions.free(zeros_), "cudaFree", "a joined rank's zeros", names);
      zeros_ = nullptr;
      zeros_bytes_ = 0;
    }
    check_cuda_call(cuda_.functions.malloc(&zeros_, bytes), "cudaMalloc", "a joined rank's zeros",
                    names);
    zeros_bytes_ = bytes;
    host_zeros_.assign(bytes, std::byte{0});
  }
  // Refilled every time: the last allreduce wrote its result there. A copy from pageable host
  // memory is staged by CUDA before it returns, so host_zeros_ stays untouched.
  if (bytes > 0) {
    check_cuda_call(cuda_.functions.memcpy_async(zeros_, host_zeros_.data(), bytes,
                                                 kCudaMemcpyDefault, stream_),
                    "cudaMemcpyAsync", "a joined rank's zeros", names);
  }
  return zeros_;
}

void NcclCollectives::wait_for_caller(cudaEvent_t ready, const std::vector<std::string>& names) {
  select_device("waiting for the caller's stream", names);
  check_cuda_call(cuda_.functions.stream_wait_event(stream_, ready, 0), "cudaStreamWaitEvent",
                  "waiting for the caller's stream", names);
}

void NcclCollectives::make_reduction(Reduction& out, NcclCommunicator& comm, int comm_size,
                                     DataType type, ReduceOp op, bool average, double factor,
                                     const std::vector<std::string>& names) {
  out.nccl = &nccl_;
  out.comm = comm.get();
  if (factor == 1.0) {
    out.op = plain_op({.op = op, .average = average}, comm_size);
    return;
  }
  if (op != ReduceOp::sum) {
    throw InvalidArgument(
        fmt::format("rank {}: allreduce of {}: the NCCL path applies prescale/postscale to Sum and "
                    "Average only, not to {}",
                    options_.rank, tensors_text(names), reduce_op_name(op)));
  }
  if (!is_floating(type)) {
    throw InvalidArgument(fmt::format(
        "rank {}: allreduce of {}: prescale/postscale need a floating-point tensor, not {}",
        options_.rank, tensors_text(names), dtype_name(type)));
  }
  if (comm_size == 1) {
    // The one-rank PreMulSum is NCCL's kernel that lost the last element (plain_op); the torch
    // front end scales CUDA tensors itself (kolo/torch/device_scale.py) and never sends one.
    throw InvalidArgument(
        fmt::format("rank {}: allreduce of {}: prescale/postscale on a single rank are applied by "
                    "the framework front end, not by NCCL",
                    options_.rank, tensors_text(names)));
  }
  // The scalar has the tensor's type; NCCL reads it before ncclRedOpCreatePreMulSum returns.
  double as_double = factor;
  auto as_float = static_cast<float>(factor);
  uint16_t as_half = type == DataType::float16 ? kernels::detail::float_to_half_bits(as_float)
                                               : kernels::detail::float_to_bfloat16_bits(as_float);
  void* scalar = type == DataType::float64   ? static_cast<void*>(&as_double)
                 : type == DataType::float32 ? static_cast<void*>(&as_float)
                                             : static_cast<void*>(&as_half);
  check_nccl_call_on(
      comm,
      nccl_.functions.red_op_create_pre_mul_sum(
          &out.op, scalar, nccl_type(type, "allreduce", names), ncclScalarHostImmediate, out.comm),
      "ncclRedOpCreatePreMulSum", "allreduce", names);
  out.created = true;
}

void NcclCollectives::reduce_all(const void* input, void* output, size_t count, DataType type,
                                 const DeviceReduction& reduction,
                                 const std::vector<std::string>& names) {
  const ncclDataType_t nccl_data = nccl_type(type, "allreduce", names);
  // Both factors and Average's division become one multiplication of each rank's input before
  // the sum (exact for a sum; Horovod's postscale after it differs only in rounding).
  const double scale = reduction.prescale * reduction.postscale;
  const double factor = scale == 1.0 ? 1.0 : reduction.average ? scale / options_.size : scale;
  Reduction op;
  make_reduction(op, comm_, options_.size, type, reduction.op, reduction.average, factor, names);
  check_nccl_call(
      nccl_.functions.all_reduce(input, output, count, nccl_data, op.op, comm_.get(), stream_),
      "ncclAllReduce", "allreduce", names);
}

NcclCollectives::Packed NcclCollectives::pack(std::span<const DeviceTensor> tensors, DataType type,
                                              const std::vector<std::string>& names) {
  const size_t element = dtype_size(type);
  if (tensors.size() == 1) {
    const DeviceTensor& tensor = tensors.front();
    return {tensor.input, tensor.output, tensor.bytes / element, {}};
  }
  Packed packed{nullptr, nullptr, 0, {}};
  size_t total = 0;
  for (const DeviceTensor& tensor : tensors) {
    packed.offsets.push_back(total);
    total += aligned(tensor.bytes);
  }
  auto* buffer = static_cast<std::byte*>(fusion_buffer(total, names));
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].bytes == 0) continue;
    check_cuda_call(cuda_.functions.memcpy_async(buffer + packed.offsets[i], tensors[i].input,
                                                 tensors[i].bytes, kCudaMemcpyDefault, stream_),
                    "cudaMemcpyAsync into the fusion buffer", "allreduce", names);
  }
  // The gaps between aligned offsets are reduced too and never copied out.
  packed.input = buffer;
  packed.output = buffer;
  packed.count = total / element;
  return packed;
}

void NcclCollectives::unpack(std::span<const DeviceTensor> tensors, const Packed& packed,
                             const std::vector<std::string>& names) {
  if (packed.offsets.empty()) return;  // one tensor, reduced into its output
  const auto* buffer = static_cast<const std::byte*>(packed.output);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].bytes == 0) continue;
    check_cuda_call(cuda_.functions.memcpy_async(tensors[i].output, buffer + packed.offsets[i],
                                                 tensors[i].bytes, kCudaMemcpyDefault, stream_),
                    "cudaMemcpyAsync out of the fusion buffer", "allreduce", names);
  }
}

void NcclCollectives::allreduce(std::span<const DeviceTensor> tensors, DataType type,
                                const DeviceReduction& reduction) {
  std::vector<std::string> names;
  for (const DeviceTensor& tensor : tensors) names.push_back(tensor.name);
  (void)nccl_type(type, "allreduce", names);  // before any call: only these tensors fail
  select_device("allreduce", names);
  const Packed packed = pack(tensors, type, names);
  reduce_all(packed.input, packed.output, packed.count, type, reduction, names);
  unpack(tensors, packed, names);
}

void NcclCollectives::broadcast(const DeviceTensor& tensor, int root) {
  const std::vector<std::string> names{tensor.name};
  select_device("broadcast", names);
  check_nccl_call(nccl_.functions.broadcast(tensor.input, tensor.output, tensor.bytes, ncclUint8,
                                            root, comm_.get(), stream_),
                  "ncclBroadcast", "broadcast", names);
}

void NcclCollectives::allgatherv(const DeviceTensor& tensor, void* out,
                                 std::span<const size_t> bytes_per_rank) {
  const std::vector<std::string> names{tensor.name};
  select_device("allgather", names);
  const bool even = std::all_of(bytes_per_rank.begin(), bytes_per_rank.end(),
                                [&](size_t bytes) { return bytes == bytes_per_rank.front(); });
  if (even) {
    check_nccl_call(nccl_.functions.all_gather(tensor.input, out, bytes_per_rank.front(), ncclUint8,
                                               comm_.get(), stream_),
                    "ncclAllGather", "allgather", names);
    return;
  }
  // Uneven first dimensions: rank r broadcasts its block into its place in everyone's output.
  check_nccl_call(nccl_.functions.group_start(), "ncclGroupStart", "allgather", names);
  size_t offset = 0;
  for (size_t r = 0; r < bytes_per_rank.size(); ++r) {
    auto* place = static_cast<std::byte*>(out) + offset;
    offset += bytes_per_rank[r];
    if (bytes_per_rank[r] == 0) continue;
    const void* send = static_cast<int>(r) == options_.rank ? tensor.input : place;
    const ncclResult_t queued = nccl_.functions.broadcast(
        send, place, bytes_per_rank[r], ncclUint8, static_cast<int>(r), comm_.get(), stream_);
    if (queued != ncclSuccess && queued != ncclInProgress) {  // inside a group: only errors
      nccl_.functions.group_end();  // close the group before reporting (aborted just after)
      check_nccl_call(queued, "ncclBroadcast", "allgather", names);
    }
  }
  check_nccl_call(nccl_.functions.group_end(), "ncclGroupEnd", "allgather", names);
}

void NcclCollectives::alltoallv(const DeviceTensor& tensor, std::span<const size_t> send_bytes,
                                void* out, std::span<const size_t> recv_bytes) {
  const std::vector<std::string> names{tensor.name};
  select_device("alltoall", names);
  check_nccl_call(nccl_.functions.group_start(), "ncclGroupStart", "alltoall", names);
  size_t send_offset = 0;
  size_t recv_offset = 0;
  for (size_t r = 0; r < send_bytes.size(); ++r) {
    const int peer = static_cast<int>(r);
    ncclResult_t queued = ncclSuccess;
    if (send_bytes[r] > 0) {
      queued = nccl_.functions.send(static_cast<const std::byte*>(tensor.input) + send_offset,
                                    send_bytes[r], ncclUint8, peer, comm_.get(), stream_);
    }
    if ((queued == ncclSuccess || queued == ncclInProgress) && recv_bytes[r] > 0) {
      queued = nccl_.functions.recv(static_cast<std::byte*>(out) + recv_offset, recv_bytes[r],
                                    ncclUint8, peer, comm_.get(), stream_);
    }
    if (queued != ncclSuccess && queued != ncclInProgress) {  // inside a group: only errors
      nccl_.functions.group_end();
      check_nccl_call(queued, send_bytes[r] > 0 ? "ncclSend/ncclRecv" : "ncclRecv", "alltoall",
                      names);
    }
    send_offset += send_bytes[r];
    recv_offset += recv_bytes[r];
  }
  check_nccl_call(nccl_.functions.group_end(), "ncclGroupEnd", "alltoall", names);
}

void NcclCollectives::reducescatter(const DeviceTensor& tensor, void* out,
                                    std::span<const size_t> counts, DataType type,
                                    const DeviceReduction& reduction) {
  const std::vector<std::string> names{tensor.name};
  const ncclDataType_t nccl_data = nccl_type(type, "reducescatter", names);
  if (reduction.prescale != 1.0 || reduction.postscale != 1.0) {
    throw InvalidArgument(
        fmt::format("rank {}: reducescatter of {}: the NCCL path takes no prescale/postscale here",
                    options_.rank, tensors_text(names)));
  }
  const ncclRedOp_t op = plain_op(reduction, options_.size);
  select_device("reducescatter", names);
  const bool even = std::all_of(counts.begin(), counts.end(),
                                [&](size_t count) { return count == counts.front(); });
  if (even) {
    check_nccl_call(nccl_.functions.reduce_scatter(tensor.input, out, counts.front(), nccl_data, op,
                                                   comm_.get(), stream_),
                    "ncclReduceScatter", "reducescatter", names);
    return;
  }
  // Uneven blocks: each rank is the root of the reduction of its own block.
  const size_t element = nccl_type_size(nccl_data);
  check_nccl_call(nccl_.functions.group_start(), "ncclGroupStart", "reducescatter", names);
  size_t offset = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    const auto* block = static_cast<const std::byte*>(tensor.input) + offset * element;
    offset += counts[r];
    if (counts[r] == 0) continue;
    const ncclResult_t queued =
        nccl_.functions.reduce(block, static_cast<int>(r) == options_.rank ? out : nullptr,
                               counts[r], nccl_data, op, static_cast<int>(r), comm_.get(), stream_);
    if (queued != ncclSuccess && queued != ncclInProgress) {  // inside a group: only errors
      nccl_.functions.group_end();
      check_nccl_call(queued, "ncclReduce", "reducescatter", names);
    }
  }
  check_nccl_call(nccl_.functions.group_end(), "ncclGroupEnd", "reducescatter", names);
}

DeviceEvent NcclCollectives::record_completion() {
  select_device("recording the completion event", {});
  cudaEvent_t event = nullptr;
  check_cuda_call(cuda_.functions.event_create_with_flags(&event, kCudaEventDisableTiming),
                  "cudaEventCreateWithFlags", "recording the completion event", {});
  DeviceEvent owned(cuda_, event);
  check_cuda_call(cuda_.functions.event_record(event, stream_), "cudaEventRecord",
                  "recording the completion event", {});
  return owned;
}

void stream_waits_for(const CudaRuntime& cuda, cudaStream_t caller, cudaEvent_t done, int device) {
  if (!cuda.status.loaded) {
    throw Error(
        fmt::format("synchronizing with kolo on CUDA device {}: {}", device, cuda.status.reason));
  }
  const std::string on_device = fmt::format("on CUDA device {}", device);
  check_cuda(cuda, cuda.functions.set_device(device), ("cudaSetDevice " + on_device).c_str());
  check_cuda(cuda, cuda.functions.stream_wait_event(caller, done, 0),
             ("cudaStreamWaitEvent (the caller's stream waits for kolo) " + on_device).c_str());
}

}  // namespace kolo::gpu
