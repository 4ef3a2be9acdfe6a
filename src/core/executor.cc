#include "core/executor.h"

#include <cstring>
#include <numeric>
#include <optional>

#include "base/copy_bytes.h"
#include "base/errors.h"
#include "fusion/fusion_planner.h"
#include "gpu/device_event_wait.h"
#include "kernels/reduce.h"

namespace kolo::core {

namespace {

using negotiation::OpType;
using negotiation::UserReduceOp;

std::span<std::byte> bytes_of(void* data, size_t size) {
  return {static_cast<std::byte*>(data), size};
}

TensorEntry& entry_for(std::map<std::string, TensorEntry>& pending, const std::string& name) {
  auto it = pending.find(name);
  if (it == pending.end()) {
    throw Error("internal error: response names tensor '" + name +
                "' that this rank never submitted");
  }
  return it->second;
}

}  // namespace

ReduceOp to_comm_op(UserReduceOp op) {
  switch (op) {
    case UserReduceOp::average:
    case UserReduceOp::sum:
      return ReduceOp::sum;
    case UserReduceOp::min:
      return ReduceOp::min;
    case UserReduceOp::max:
      return ReduceOp::max;
    case UserReduceOp::product:
      return ReduceOp::product;
    case UserReduceOp::adasum:
      break;  // not an elementwise op: Executor::adasum
  }
  throw InvalidArgument(std::string("reduction '") +
                        std::string(negotiation::user_reduce_op_name(op)) +
                        "' is not supported by this version of kolo");
}

void Executor::run(const std::vector<negotiation::Response>& responses,
                   std::map<std::string, TensorEntry>& pending) {
  // A group's handles complete together (HandleTable::complete_all).
  std::vector<std::pair<HandleId, OwnedBuffer>> finished;
  auto finish = [&](const std::vector<std::string>& names) {
    finished.clear();
    for (const auto& name : names) {
      auto it = pending.find(name);
      finished.emplace_back(it->second.handle, std::move(it->second.allocated_output));
      pending.erase(it);
    }
    handles_.complete_all(finished);
  };

  auto tensor_bytes = [&](const std::string& name) { return entry_for(pending, name).bytes(); };
  for (const auto& group :
       fusion::plan_fusion(responses, tensor_bytes, options_.fusion_threshold)) {
    const negotiation::Response& response = group.response;
    ++stats_.responses;
    if (observer_ != nullptr) {
      observer_->group_started({response.names, groups_started_++, group.buffer_bytes});
    }
    struct Finished {  // tells the observer on every way out of this iteration
      ExecutionObserver* observer;
      const std::vector<std::string>& names;
      ~Finished() {
        if (observer != nullptr) observer->group_finished(names);
      }
    } finished{observer_, response.names};
    if (!response.error.empty()) {
      fail_all(response.names, response.error, pending);
      continue;
    }
    wait_for_device_copies(response.names, pending);
    try {
      if (response.device == negotiation::DeviceKind::cuda) {
        execute_on_device(group, pending);
      } else {
        execute(group, pending);
      }
    } catch (const InvalidArgument& error) {
      // Decided identically on every rank before any byte moved (e.g. an unsupported reduction),
      // so only these tensors fail; the session goes on.
      fail_all(response.names, error.what(), pending);
      continue;
    } catch (const UnsupportedOperation& error) {
      // The backend lacks the op (or its type/reduction): same decision on every rank, before any
      // byte moved, so again only these tensors fail.
      fail_all(response.names, error.what(), pending);
      continue;
    }
    finish(response.names);
  }
}

void Executor::wait_for_device_copies(const std::vector<std::string>& names,
                                      std::map<std::string, TensorEntry>& pending) {
  // Only the asynchronous host path sets ready_event; other entries cost one comparison.
  bool any = false;
  for (const auto& name : names) any = any || entry_for(pending, name).ready_event != 0;
  if (!any) return;
  ObservedPhase phase(observer_, names, "WAIT_FOR_DATA");  // Horovod's timeline name
  for (const auto& name : names) {
    const TensorEntry& entry = entry_for(pending, name);
    if (entry.ready_event != 0) gpu::wait_for_device_event(entry.ready_event, entry.ready_device);
  }
}

void Executor::fail_all(const std::vector<std::string>& names, const std::string& error,
                        std::map<std::string, TensorEntry>& pending) {
  for (const auto& name : names) {
    auto it = pending.find(name);
    if (it == pending.end()) continue;
    handles_.fail(it->second.handle, error);
    pending.erase(it);
  }
}

void Executor::execute(const fusion::FusedGroup& group,
                       std::map<std::string, TensorEntry>& pending) {
  const negotiation::Response& response = group.response;
  switch (response.op) {
    case OpType::allreduce: {
      if (response.reduce_op == UserReduceOp::adasum) {
        // Never fused: the dot products that scale each tensor are its own.
        ObservedPhase phase(observer_, response.names, "KOLO_ADASUM");
        for (const auto& name : response.names) adasum(response, entry_for(pending, name));
        return;
      }
      std::vector<TensorEntry*> entries;
      for (const auto& name : response.names) entries.push_back(&entry_for(pending, name));
      allreduce(group, entries);
      return;
    }
    case OpType::allgather: {
      ObservedPhase phase(observer_, response.names, "KOLO_ALLGATHER");
      for (size_t i = 0; i < response.names.size(); ++i) {
        allgather(response, entry_for(pending, response.names[i]), i);
      }
      return;
    }
    case OpType::broadcast: {
      ObservedPhase phase(observer_, response.names, "KOLO_BROADCAST");
      for (const auto& name : response.names) broadcast(response, entry_for(pending, name));
      return;
    }
    case OpType::barrier: {
      ObservedPhase phase(observer_, response.names, "KOLO_BARRIER");
      backend_.barrier();
      return;
    }
    case OpType::reducescatter: {
      ObservedPhase phase(observer_, response.names, "KOLO_REDUCESCATTER");
      for (const auto& name : response.names) reducescatter(response, entry_for(pending, name));
      return;
    }
    case OpType::alltoall: {
      ObservedPhase phase(observer_, response.names, "KOLO_ALLTOALL");
      for (size_t i = 0; i < response.names.size(); ++i) {
        alltoall(response, entry_for(pending, response.names[i]), i);
      }
      return;
    }
    default:
      throw InvalidArgument("operation '" + std::string(negotiation::op_type_name(response.op)) +
                            "' is not supported by this version of kolo");
  }
}

kernels::ResultScale Executor::result_scale(const negotiation::Response& response) const {
  // Average divides by the size, not Horovod's multiplication by 1/size (kernels/average.cc).
  return {.average_over = response.reduce_op == UserReduceOp::average ? options_.size : 1,
          .postscale = response.postscale};
}

void Executor::run_scaled(const negotiation::Response& response, const ScaledRun& run,
                          const std::function<void(const kernels::ResultScale&)>& backend_op) {
  const kernels::ResultScale scale = result_scale(response);
  scale.check(response.dtype);  // an impossible scale fails the tensor before any byte moves
  if (!run.input.empty() && run.input.data() != run.work.data()) {
    copy_bytes(run.work.data(), run.input.data(), run.input.size());
  }
  const size_t element = dtype_size(response.dtype);
  if (response.prescale != 1.0) {
    kernels::scale_buffer(run.work.data(), run.work.size() / element, response.dtype,
                          response.prescale);
  }
  std::optional<ObservedPhase> phase;
  if (run.phase != nullptr) phase.emplace(observer_, response.names, run.phase);
  backend_op(scale);
  if (!run.backend_scales)
    scale.apply(run.result.data(), run.result.size() / element, response.dtype);
}

void Executor::allreduce(const fusion::FusedGroup& group, std::vector<TensorEntry*>& entries) {
  const negotiation::Response& response = group.response;
  const ReduceOp op = to_comm_op(response.reduce_op);
  const size_t element = dtype_size(response.dtype);

  // Where the backend can (the host arena), the tensors go straight from their inputs to their
  // outputs: several without a fusion buffer, one out of place without copying its input over
  // its output first. Else one tensor reduces in place in its output; several are packed into
  // the fusion buffer.
  const bool copies_saved = entries.size() > 1 || entries.front()->input != entries.front()->output;
  if (copies_saved && response.prescale == 1.0 && allreduce_pieces(response, entries)) return;
  ScaledRun run;
  run.phase = "KOLO_ALLREDUCE";
  if (entries.size() == 1) {
    TensorEntry& entry = *entries.front();
    run.input = {static_cast<const std::byte*>(entry.input), entry.bytes()};
    run.work = bytes_of(entry.output, entry.bytes());
  } else {
    // Offsets are 64-byte aligned (as Horovod's), so the packed buffer may hold small gaps; they
    // are reduced along with the tensors and never copied out.
    const size_t total = group.buffer_bytes;
    run.work = fusion_buffer_.get(total).first(total / element * element);
    ObservedPhase phase(observer_, response.names, "MEMCPY_IN_FUSION_BUFFER");
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i]->bytes() > 0) {
        copy_bytes(run.work.data() + group.tensors[i].offset, entries[i]->input,
                   entries[i]->bytes());
      }
    }
    count_fused(entries.size());
  }
  run.result = run.work;
  run.backend_scales = true;  // where each total is computed, not in another pass (result_scale.h)
  run_scaled(response, run, [&](const kernels::ResultScale& scale) {
    backend_.allreduce_scaled(run.work, run.work.size() / element, response.dtype, op, scale);
  });
  if (entries.size() > 1) {
    ObservedPhase phase(observer_, response.names, "MEMCPY_OUT_FUSION_BUFFER");
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i]->bytes() > 0) {
        copy_bytes(entries[i]->output, run.work.data() + group.tensors[i].offset,
                   entries[i]->bytes());
      }
    }
  }
}

bool Executor::allreduce_pieces(const negotiation::Response& response,
                                std::vector<TensorEntry*>& entries) {
  size_t bytes = 0;
  for (const TensorEntry* entry : entries) bytes += entry->bytes();
  if (!backend_.reduces_pieces(bytes)) return false;  // before building anything
  std::vector<BufferPiece> pieces;
  pieces.reserve(entries.size());
  for (const TensorEntry* entry : entries) {
    pieces.push_back({static_cast<const std::byte*>(entry->input),
                      static_cast<std::byte*>(entry->output), entry->bytes()});
  }
  const kernels::ResultScale scale = result_scale(response);
  scale.check(response.dtype);  // an impossible scale fails the tensors before any byte moves
  ObservedPhase phase(observer_, response.names, "KOLO_ALLREDUCE");
  backend_.allreduce_pieces(pieces, bytes / dtype_size(response.dtype), response.dtype,
                            to_comm_op(response.reduce_op), scale);
  if (entries.size() > 1) count_fused(entries.size());
  return true;
}

void Executor::allgather(const negotiation::Response& response, TensorEntry& entry, size_t index) {
  const auto& shape = entry.request.shape;
  const size_t element = dtype_size(entry.request.dtype);
  size_t row_elements = 1;
  for (size_t d = 1; d < shape.size(); ++d) row_elements *= static_cast<size_t>(shape[d]);
  const size_t row_bytes = row_elements * element;

  std::vector<size_t> bytes_per_rank(options_.size);
  int64_t total_rows = 0;
  for (int r = 0; r < options_.size; ++r) {
    const int64_t rows = response.first_dims.at(index * options_.size + r);
    bytes_per_rank[r] = static_cast<size_t>(rows) * row_bytes;
    total_rows += rows;
  }
  const size_t total = static_cast<size_t>(total_rows) * row_bytes;
  OwnedBuffer out = make_owned_buffer(total, shape, entry.request.dtype);
  if (out.shape.empty()) out.shape.push_back(0);
  out.shape[0] = total_rows;
  backend_.allgatherv({static_cast<const std::byte*>(entry.input), bytes_per_rank[options_.rank]},
                      {out.data.get(), total}, bytes_per_rank);
  entry.allocated_output = std::move(out);
}

void Executor::broadcast(const negotiation::Response& response, TensorEntry& entry) {
  std::span<std::byte> buffer = bytes_of(entry.output, entry.bytes());
  if (entry.output != entry.input && !buffer.empty()) {
    copy_bytes(entry.output, entry.input, buffer.size());
  }
  backend_.broadcast(buffer, response.root);
}

}  // namespace kolo::core
