// What one rank can tell is wrong with its own request before sending it (its caller's arguments),
// as opposed to what only the coordinator sees (ranks that disagree). Horovod raises these on the
// caller's thread: ValueError for a bad argument, HorovodInternalError for an op it refuses.
#pragma once

#include <string>
#include <vector>

#include "negotiation/message.h"

namespace kolo::core {

struct LocalProblem {
  std::string message;        // empty: nothing wrong
  bool bad_argument = false;  // true: a ValueError (InvalidArgument); false: a kolo::Error
};

// Checks `request` (stamped with its rank in the set) against the set's ranks (ascending job
// ranks) and maps a broadcast root from a job rank to the set's numbering. A message the caller
// already put in request.invalid (the Python layer's own checks) is returned as a bad argument.
LocalProblem find_local_problem(negotiation::Request& request, const std::vector<int>& set_ranks,
                                int job_rank);

}  // namespace kolo::core
