#include "comm/collective_checks.h"

#include <fmt/format.h>

#include <numeric>

#include "base/errors.h"

namespace kolo::comm::detail {

namespace {

// Writes each entry's start when `sizes` are laid out back to back, plus the total at the end,
// into starts[0..sizes.size()].
void write_starts(std::span<const size_t> sizes, size_t* starts) {
  starts[0] = 0;
  for (size_t i = 0; i < sizes.size(); ++i) starts[i + 1] = starts[i] + sizes[i];
}

std::vector<size_t> prefix_sums(std::span<const size_t> sizes) {
  std::vector<size_t> starts(sizes.size() + 1);
  write_starts(sizes, starts.data());
  return starts;
}

}  // namespace

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

std::vector<size_t> checked_blocks(const Communicator& comm, const char* collective,
                                   ConstBytes mine, Bytes out,
                                   std::span<const size_t> bytes_per_rank) {
  const int n = comm.size();
  const int rank = comm.rank();
  if (bytes_per_rank.size() != static_cast<size_t>(n)) {
    throw InvalidArgument(fmt::format("rank {}: {} got {} block sizes for a group of {}", rank,
                                      collective, bytes_per_rank.size(), n));
  }
  const std::vector<size_t> offset = prefix_sums(bytes_per_rank);
  if (mine.size() != bytes_per_rank[rank] || out.size() < offset[n]) {
    throw InvalidArgument(
        fmt::format("rank {}: {} block is {} bytes (expected {}), output {} bytes (needs {})", rank,
                    collective, mine.size(), bytes_per_rank[rank], out.size(), offset[n]));
  }
  return offset;
}

std::vector<size_t> checked_reducescatter(const Communicator& comm, const char* collective,
                                          ConstBytes data, std::span<const size_t> counts,
                                          DataType type, Bytes out) {
  const int n = comm.size();
  const int rank = comm.rank();
  if (counts.size() != static_cast<size_t>(n)) {
    throw InvalidArgument(fmt::format("rank {}: {} got {} block counts for a group of {}", rank,
                                      collective, counts.size(), n));
  }
  std::vector<size_t> first = prefix_sums(counts);
  checked_bytes(comm, collective, data.size(), first[n], type);
  const size_t needed = counts[static_cast<size_t>(rank)] * dtype_size(type);
  if (out.size() < needed) {
    throw InvalidArgument(fmt::format("rank {}: {} output has {} bytes, needs {}", rank, collective,
                                      out.size(), needed));
  }
  return first;
}

BlockOffsets::BlockOffsets(std::span<const size_t> sizes) {
  if (sizes.size() <= kInlineBlocks) {
    starts_ = inline_.data();
  } else {
    heap_.resize(sizes.size() + 1);
    starts_ = heap_.data();
  }
  write_starts(sizes, starts_);
}

AlltoallOffsets checked_alltoall(const Communicator& comm, const char* collective, ConstBytes in,
                                 std::span<const size_t> send_bytes, Bytes out,
                                 std::span<const size_t> recv_bytes) {
  const int n = comm.size();
  const int rank = comm.rank();
  if (send_bytes.size() != static_cast<size_t>(n) || recv_bytes.size() != static_cast<size_t>(n)) {
    throw InvalidArgument(
        fmt::format("rank {}: {} got {} send and {} receive sizes for a group of {}", rank,
                    collective, send_bytes.size(), recv_bytes.size(), n));
  }
  const size_t send_total = std::accumulate(send_bytes.begin(), send_bytes.end(), size_t{0});
  const size_t recv_total = std::accumulate(recv_bytes.begin(), recv_bytes.end(), size_t{0});
  if (in.size() < send_total || out.size() < recv_total) {
    throw InvalidArgument(
        fmt::format("rank {}: {} input has {} bytes (needs {}), output {} bytes (needs {})", rank,
                    collective, in.size(), send_total, out.size(), recv_total));
  }
  if (send_bytes[rank] != recv_bytes[rank]) {
    throw InvalidArgument(fmt::format("rank {}: {} sends itself {} bytes but expects {}", rank,
                                      collective, send_bytes[rank], recv_bytes[rank]));
  }
  // A prvalue of prvalues: built in the caller's variable, never copied.
  return AlltoallOffsets{BlockOffsets(send_bytes), BlockOffsets(recv_bytes)};
}

}  // namespace kolo::comm::detail
