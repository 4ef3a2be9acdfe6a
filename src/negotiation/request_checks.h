// The coordinator's consistency rules: given every rank's Request for one tensor name, either the
// Response all ranks execute or an error message naming the tensor, the field, and each group of
// ranks with the value it submitted. Pure functions, no state.
#pragma once

#include <string>
#include <vector>

#include "negotiation/message.h"

namespace kolo::negotiation {

// "rank 3", "rank 0 and rank 2", "ranks 0-3, 5 and 7" (ascending, runs of 3+ compressed).
std::string describe_ranks(std::vector<int> ranks);

// First rule that the requests break, as a complete message such as
// "Mismatched dtype for tensor 'w': rank 0 and rank 2 submitted float32, rank 1 submitted
// float16"; empty when they are consistent. by_rank[r] is rank r's request (all present).
std::string find_mismatch(const std::vector<Request>& by_rank);

// Why `request` (an alltoall from request.rank) cannot be split among `size` ranks: splits of
// the wrong length, not summing to the first dimension, or (without splits) a first dimension
// that does not divide evenly; empty when it can.
std::string alltoall_splits_problem(const Request& request, int size);

// Rows of the first dimension the alltoall `request` sends to each rank (its splits, or the even
// split when it has none).
std::vector<int64_t> alltoall_send_rows(const Request& request, int size);

// Rows of a `rows`-row reducescatter that `rank` receives: Horovod's split, the first
// rows % size ranks get one row more.
int64_t reducescatter_rows(int64_t rows, int size, int rank);

// The Response for consistent requests (allgather: first_dims filled per rank).
Response make_response(const std::vector<Request>& by_rank);

// A Response that fails `name` everywhere with `error`; op and dtype are copied from `like` so
// logs and timelines can still say what the op was.
Response make_error_response(const Request& like, std::string error);

}  // namespace kolo::negotiation
