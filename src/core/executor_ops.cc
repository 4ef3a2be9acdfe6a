// The executor's paths for Adasum, reducescatter and alltoall: one tensor at a time, outputs whose
// size depends on the rank (reducescatter, alltoall) allocated by the runtime.
#include <fmt/format.h>

#include <cstring>

#include "base/errors.h"
#include "comm/adasum.h"
#include "core/executor.h"
#include "kernels/reduce.h"
#include "negotiation/request_checks.h"

namespace kolo::core {

namespace {

using negotiation::UserReduceOp;

// Elements of one row (every dimension but the first) of `shape`.
size_t row_elements(const std::vector<int64_t>& shape) {
  size_t elements = 1;
  for (size_t d = 1; d < shape.size(); ++d) elements *= static_cast<size_t>(shape[d]);
  return elements;
}

}  // namespace

void Executor::adasum(const negotiation::Response& response, TensorEntry& entry) {
  if (!comm::adasum_supports(response.dtype)) {
    throw InvalidArgument(
        fmt::format("Adasum cannot reduce tensor '{}' of type {}: it needs "
                    "float16, bfloat16, float32 or float64",
                    entry.request.name, dtype_name(response.dtype)));
  }
  std::span<std::byte> data{static_cast<std::byte*>(entry.output), entry.bytes()};
  run_scaled(response,
             {.input = {static_cast<const std::byte*>(entry.input), entry.bytes()},
              .work = data,
              .result = data},
             [&](const kernels::ResultScale&) {
               backend_.adasum(data, static_cast<size_t>(entry.request.num_elements()),
                               response.dtype);
             });
}

void Executor::reducescatter(const negotiation::Response& response, TensorEntry& entry) {
  const ReduceOp op = to_comm_op(response.reduce_op);
  const auto& shape = entry.request.shape;
  const size_t row = row_elements(shape);
  const size_t element = dtype_size(response.dtype);
  std::vector<size_t> counts(static_cast<size_t>(options_.size));
  for (int r = 0; r < options_.size; ++r) {
    counts[static_cast<size_t>(r)] =
        static_cast<size_t>(negotiation::reducescatter_rows(shape[0], options_.size, r)) * row;
  }
  const size_t mine = counts[static_cast<size_t>(options_.rank)];

  // The ring clobbers its input, so it runs on a copy in the fusion buffer.
  std::span<std::byte> work = fusion_buffer_.get(entry.bytes()).first(entry.bytes());
  std::vector<int64_t> out_shape = shape;
  out_shape[0] = negotiation::reducescatter_rows(shape[0], options_.size, options_.rank);
  OwnedBuffer out = make_owned_buffer(mine * element, std::move(out_shape), response.dtype);
  std::span<std::byte> result{out.data.get(), out.bytes};
  run_scaled(response,
             {.input = {static_cast<const std::byte*>(entry.input), entry.bytes()},
              .work = work,
              .result = result},
             [&](const kernels::ResultScale&) {
               backend_.reducescatter(work, counts, response.dtype, op, result);
             });
  entry.allocated_output = std::move(out);
}

void Executor::alltoall(const negotiation::Response& response, TensorEntry& entry, size_t index) {
  const size_t n = static_cast<size_t>(options_.size);
  const size_t me = static_cast<size_t>(options_.rank);
  if (response.splits.size() < (index + 1) * n * n) {
    throw Error(fmt::format("internal error: alltoall response for '{}' carries {} splits",
                            entry.request.name, response.splits.size()));
  }
  // rows[r * n + d]: rows rank r sends rank d.
  const int64_t* rows = response.splits.data() + index * n * n;
  const size_t row_bytes = row_elements(entry.request.shape) * dtype_size(response.dtype);
  std::vector<size_t> send_bytes(n), recv_bytes(n);
  std::vector<int64_t> received(n);
  int64_t total_rows = 0;
  for (size_t r = 0; r < n; ++r) {
    send_bytes[r] = static_cast<size_t>(rows[me * n + r]) * row_bytes;
    received[r] = rows[r * n + me];
    recv_bytes[r] = static_cast<size_t>(received[r]) * row_bytes;
    total_rows += received[r];
  }
  std::vector<int64_t> out_shape = entry.request.shape;
  out_shape[0] = total_rows;
  OwnedBuffer out = make_owned_buffer(static_cast<size_t>(total_rows) * row_bytes,
                                      std::move(out_shape), response.dtype);
  out.received_splits = std::move(received);
  backend_.alltoallv({static_cast<const std::byte*>(entry.input), entry.bytes()}, send_bytes,
                     {out.data.get(), out.bytes}, recv_bytes);
  entry.allocated_output = std::move(out);
}

}  // namespace kolo::core
