// One submitted collective on this rank: what was asked (the Request the coordinator sees) plus
// where the bytes live. The caller (Python) keeps the memory alive until the handle completes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "negotiation/message.h"

namespace kolo::core {

using HandleId = int64_t;
// Handles start at 1: an entry with no handle (a joined rank's stand-in) completes silently.
inline constexpr HandleId kNoHandle = 0;

// Memory the runtime allocated for an output whose size is only known after negotiation
// (allgather). 64-byte aligned; handed to the caller after completion.
struct OwnedBuffer {
  std::shared_ptr<std::byte[]> data;
  size_t bytes = 0;
  std::vector<int64_t> shape;
  comm::DataType dtype = comm::DataType::uint8;
};

struct TensorEntry {
  negotiation::Request request;
  const void* input = nullptr;   // request.shape elements of request.dtype
  void* output = nullptr;        // same shape (allreduce, broadcast); may equal input
  HandleId handle = 0;
  OwnedBuffer allocated_output;  // allgather: filled by the executor

  [[nodiscard]] size_t bytes() const;
};

}  // namespace kolo::core
