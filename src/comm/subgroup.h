// A communicator over some ranks of another one, borrowing the same links: used by the
// topology-aware algorithms (the ranks of one host, one rank per host). Ranks are renumbered
// 0..k-1 in the order given; links keep naming peers by their world rank in errors.
#pragma once

#include <span>

#include "comm/communicator.h"

namespace kolo::comm {

// `ranks` lists members by their rank in `comm`; it must contain comm.rank().
Communicator subgroup(Communicator& comm, std::span<const int> ranks);

}  // namespace kolo::comm
