// How a whole group leaves the coordinator: the responses of its members (each ready on every
// rank) become as few responses as possible, each naming several tensors that execute as one
// unit (one fusion buffer for allreduce). A group with a failed member fails as a whole.
#pragma once

#include <cstdint>
#include <vector>

#include "negotiation/message.h"

namespace kolo::negotiation {

// Members in the order they completed. Members that agree on the op and its parameters (reduce
// op, dtype, scale factors, root, process set, device) share one response, names in member
// order with their per-name data (first_dims, splits) concatenated; members that differ (a group
// of float32 and float16 tensors) get one response per kind, released together. If any member
// failed, every member fails, naming the member that caused it; so does a group mixing CPU and
// CUDA tensors (the same members on every rank, so every rank fails it alike).
std::vector<Response> merge_group(int32_t group_id, std::vector<Response> members);

}  // namespace kolo::negotiation
