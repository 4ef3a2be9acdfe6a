// The executor's NCCL path for the operations whose output size negotiation decides (allgather,
// alltoall, reducescatter, grouped too): the agreed shape of each output is computed here, as the
// host path does, and the front end's allocator (TensorEntry::device_allocator, a torch.empty on
// the tensor's device) is asked for it on this thread. The ranks then agree over kolo's CPU links
// that every output exists before any NCCL call: a rank whose allocator failed would otherwise
// leave its peers inside the collective forever. The agreement is one allgather of one byte per
// rank per group (a few tens of microseconds on kolo's links), skipped at one rank.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.h"
#include "core/executor.h"
#include "negotiation/request_checks.h"

namespace kolo::core {

namespace {

size_t row_elements(const std::vector<int64_t>& shape) {
  size_t elements = 1;
  for (size_t d = 1; d < shape.size(); ++d) elements *= static_cast<size_t>(shape[d]);
  return elements;
}

}  // namespace

std::vector<Executor::DeviceOutput> Executor::plan_device_outputs(
    const negotiation::Response& response, const std::vector<TensorEntry*>& entries) const {
  const size_t n = static_cast<size_t>(options_.size);
  const size_t me = static_cast<size_t>(options_.rank);
  std::vector<DeviceOutput> plans(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const TensorEntry& entry = *entries[i];
    DeviceOutput& plan = plans[i];
    plan.shape = entry.request.shape;
    if (plan.shape.empty()) plan.shape.push_back(0);
    const size_t row = row_elements(entry.request.shape);
    const size_t row_bytes = row * dtype_size(response.dtype);
    plan.per_rank.resize(n);
    int64_t rows = 0;
    switch (response.op) {
      case negotiation::OpType::allgather:
        for (size_t r = 0; r < n; ++r) {
          const int64_t first = response.first_dims.at(i * n + r);
          plan.per_rank[r] = static_cast<size_t>(first) * row_bytes;
          rows += first;
        }
        break;
      case negotiation::OpType::alltoall: {
        if (response.splits.size() < (i + 1) * n * n) {
          throw Error(fmt::format("internal error: alltoall response for '{}' carries {} splits",
                                  entry.request.name, response.splits.size()));
        }
        const int64_t* split = response.splits.data() + i * n * n;  // [r * n + d]: r sends d
        plan.send.resize(n);
        for (size_t r = 0; r < n; ++r) {
          plan.send[r] = static_cast<size_t>(split[me * n + r]) * row_bytes;
          plan.received_splits.push_back(split[r * n + me]);
          plan.per_rank[r] = static_cast<size_t>(split[r * n + me]) * row_bytes;
          rows += split[r * n + me];
        }
        break;
      }
      case negotiation::OpType::reducescatter:
        for (size_t r = 0; r < n; ++r) {  // elements, as NCCL counts them
          plan.per_rank[r] = static_cast<size_t>(negotiation::reducescatter_rows(
                                 entry.request.shape.at(0), options_.size, static_cast<int>(r))) *
                             row;
        }
        rows = negotiation::reducescatter_rows(entry.request.shape.at(0), options_.size,
                                               options_.rank);
        break;
      default:
        throw Error("internal error: no device output to plan for " +
                    std::string(negotiation::op_type_name(response.op)));
    }
    plan.shape[0] = rows;
    plan.bytes = static_cast<size_t>(rows) * row_bytes;
  }
  return plans;
}

void Executor::allocate_device_outputs(const negotiation::Response& response,
                                       const std::vector<TensorEntry*>& entries,
                                       std::vector<DeviceOutput>& plans) {
  const std::string_view op = negotiation::op_type_name(response.op);
  std::string failure;  // this rank's first failure, with its reason
  for (size_t i = 0; i < entries.size() && failure.empty(); ++i) {
    TensorEntry& entry = *entries[i];
    try {
      if (!entry.device_allocator) {
        throw Error("no output allocator was registered (the front end bypassed nccl_submit)");
      }
      const DeviceOutputMemory memory = entry.device_allocator(plans[i].shape);
      // NOLINTNEXTLINE(performance-no-int-to-ptr): the pointer travels from Python as an integer
      plans[i].data = reinterpret_cast<void*>(memory.data);
      plans[i].ready_event = memory.ready_event;
      if (plans[i].data == nullptr && plans[i].bytes > 0) {
        throw Error(fmt::format("the allocator returned no memory for {} bytes", plans[i].bytes));
      }
    } catch (const std::exception& error) {
      failure = fmt::format(
          "rank {}: {} of CUDA tensor '{}': allocating its output of shape [{}] "
          "on CUDA device {} failed: {}",
          options_.rank, op, entry.request.name, fmt::join(plans[i].shape, ", "),
          entry.request.device_index, error.what());
    }
  }
  if (options_.size == 1) {
    if (!failure.empty()) throw InvalidArgument(failure);
    return;
  }
  // Every rank learns which ranks could not allocate before anyone enters NCCL; all then fail
  // these tensors alike (InvalidArgument: only these tensors, the session goes on).
  const std::byte mine{static_cast<unsigned char>(failure.empty() ? 0 : 1)};
  std::vector<std::byte> all(static_cast<size_t>(options_.size));
  const std::vector<size_t> one(static_cast<size_t>(options_.size), 1);
  backend_.allgatherv({&mine, 1}, all, one);
  if (!failure.empty()) throw InvalidArgument(failure);
  for (int r = 0; r < options_.size; ++r) {
    if (all[static_cast<size_t>(r)] != std::byte{0}) {
      throw InvalidArgument(fmt::format(
          "rank {}: {} of CUDA tensor '{}' not run: rank {} could not allocate its output on its "
          "GPU (its own error says why)",
          options_.rank, op, entries.front()->request.name, r));
    }
  }
}

void Executor::run_with_device_outputs(const negotiation::Response& response,
                                       const std::vector<TensorEntry*>& entries,
                                       gpu::NcclCollectives& ops) {
  std::vector<DeviceOutput> plans = plan_device_outputs(response, entries);
  allocate_device_outputs(response, entries, plans);
  for (const DeviceOutput& plan : plans) {
    if (plan.ready_event != 0) {
      // NOLINTNEXTLINE(performance-no-int-to-ptr): the event travels from Python as an integer
      ops.wait_for_caller(reinterpret_cast<gpu::cudaEvent_t>(plan.ready_event), response.names);
    }
  }
  const char* phase = response.op == negotiation::OpType::allgather  ? "NCCL_ALLGATHER"
                      : response.op == negotiation::OpType::alltoall ? "NCCL_ALLTOALL"
                                                                     : "NCCL_REDUCESCATTER";
  ObservedPhase observed(observer_, response.names, phase);
  for (size_t i = 0; i < entries.size(); ++i) {
    TensorEntry& entry = *entries[i];
    DeviceOutput& plan = plans[i];
    const gpu::DeviceTensor tensor{entry.request.name, entry.input, nullptr, entry.bytes()};
    if (response.op == negotiation::OpType::allgather) {
      ops.allgatherv(tensor, plan.data, plan.per_rank);
    } else if (response.op == negotiation::OpType::alltoall) {
      ops.alltoallv(tensor, plan.send, plan.data, plan.per_rank);
    } else {
      ops.reducescatter(tensor, plan.data, plan.per_rank, response.dtype,
                        {.op = to_comm_op(response.reduce_op),
                         .average = response.reduce_op == negotiation::UserReduceOp::average,
                         .prescale = response.prescale,
                         .postscale = response.postscale});
    }
    // The front end holds the memory; the handle carries what it needs to build its result.
    entry.allocated_output.bytes = plan.bytes;
    entry.allocated_output.shape = std::move(plan.shape);
    entry.allocated_output.dtype = response.dtype;
    entry.allocated_output.received_splits = std::move(plan.received_splits);
  }
}

}  // namespace kolo::core
