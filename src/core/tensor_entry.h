// One submitted collective on this rank: what was asked (the Request the coordinator sees) plus
// where the bytes live. The caller (Python) keeps the memory alive until the handle completes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "negotiation/message.h"

namespace kolo::core {

using HandleId = int64_t;
// Handles start at 1: an entry with no handle (a joined rank's stand-in) completes silently.
inline constexpr HandleId kNoHandle = 0;

// Memory the runtime allocated for an output whose size is only known after negotiation
// (allgather, alltoall, reducescatter). 64-byte aligned; handed to the caller after completion.
struct OwnedBuffer {
  std::shared_ptr<std::byte[]> data;
  size_t bytes = 0;
  std::vector<int64_t> shape;
  DataType dtype = DataType::uint8;
  // alltoall: rows received from each rank, in rank order.
  std::vector<int64_t> received_splits;
  // The NCCL path: the cudaEvent_t recorded on kolo's stream after the op (0: a host result),
  // which synchronize() makes the caller's stream wait for, and its owner (destroys it).
  std::uintptr_t device_done = 0;
  std::shared_ptr<void> device_done_owner;
};

// A 64-byte aligned buffer of `bytes` (at least 1 byte is allocated, so that a zero-sized
// result still has a valid pointer for DLPack).
OwnedBuffer make_owned_buffer(size_t bytes, std::vector<int64_t> shape, DataType dtype);

// What a front end's device allocator returns: the memory (0 for an empty output) and a
// cudaEvent_t recorded on the stream it was allocated on (0: none), which kolo's stream waits for
// before writing it: torch's caching allocator may hand out a block that kernels queued on that
// stream before its last free still use.
struct DeviceOutputMemory {
  std::uintptr_t data = 0;
  std::uintptr_t ready_event = 0;
};

struct TensorEntry {
  negotiation::Request request;
  const void* input = nullptr;  // request.shape elements of request.dtype
  void* output = nullptr;       // same shape (allreduce, broadcast); may equal input
  HandleId handle = 0;
  OwnedBuffer allocated_output;  // allgather: filled by the executor
  // The asynchronous host path (kolo/torch/staging.py): a cudaEvent_t recorded after the copy
  // that fills `input` from the GPU, on CUDA device `ready_device`; the executor waits for it
  // before reading `input`. 0: the input is ready when submitted.
  std::uintptr_t ready_event = 0;
  int ready_device = -1;
  // The NCCL path (request.device == cuda): `input` and `output` are device pointers on CUDA
  // device request.device_index, and `caller_event` a cudaEvent_t recorded on the caller's
  // stream at submission, which kolo's stream waits for before reading them.
  std::uintptr_t caller_event = 0;
  // The NCCL path's allgather, alltoall and reducescatter: called on the background thread once
  // negotiation agreed on the output's shape, it returns device memory on request.device_index
  // for that many elements, allocated and kept alive by the front end until synchronize(), or
  // throws kolo::Error with the reason (out of memory). Empty elsewhere.
  std::function<DeviceOutputMemory(const std::vector<int64_t>& shape)> device_allocator;
  // A blocking call that waits right after submitting: its thread runs the cycles that complete
  // it (Session::drive) instead of waking the background thread.
  bool caller_drives = false;

  [[nodiscard]] size_t bytes() const;
};

}  // namespace kolo::core
