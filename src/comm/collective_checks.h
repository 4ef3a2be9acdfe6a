// Internal to comm/: argument checks shared by the collectives. They run before any byte moves,
// so a bad call fails on the rank that made it instead of leaving its peers waiting mid-protocol.
#pragma once

#include <cstddef>

#include "base/types.h"
#include "comm/communicator.h"

namespace kolo::comm::detail {

// Throws InvalidArgument unless `data` holds at least `count` elements of `type`; returns the
// byte count.
size_t checked_bytes(const Communicator& comm, const char* collective, size_t data_bytes,
                     size_t count, DataType type);

// Throws InvalidArgument unless 0 <= root < size.
void check_root(const Communicator& comm, const char* collective, int root);

}  // namespace kolo::comm::detail
