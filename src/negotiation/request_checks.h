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

// The Response for consistent requests (allgather: first_dims filled per rank).
Response make_response(const std::vector<Request>& by_rank);

// A Response that fails `name` everywhere with `error`; op and dtype are copied from `like` so
// logs and timelines can still say what the op was.
Response make_error_response(const Request& like, std::string error);

}  // namespace kolo::negotiation
