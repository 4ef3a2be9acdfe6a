#include "comm/collective_checks.h"

#include <fmt/format.h>

#include "base/errors.h"

namespace kolo::comm::detail {

size_t checked_bytes(const Communicator& comm, const char* collective, size_t data_bytes,
                     size_t count, DataType type) {
  const size_t element = dtype_size(type);
  if (count > data_bytes / element) {
    throw InvalidArgument(fmt::format("rank {}: {} of {} {} elements needs {} bytes, buffer has {}",
                                      comm.rank(), collective, count, dtype_name(type),
                                      count * element, data_bytes));
  }
  return count * element;
}

void check_root(const Communicator& comm, const char* collective, int root) {
  if (root < 0 || root >= comm.size()) {
    throw InvalidArgument(fmt::format("rank {}: {} root {} is outside a group of {}", comm.rank(),
                                      collective, root, comm.size()));
  }
}

}  // namespace kolo::comm::detail
