// Internal to comm/: argument checks shared by the collectives. They run before any byte moves,
// so a bad call fails on the rank that made it instead of leaving its peers waiting mid-protocol.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "base/types.h"
#include "comm/communicator.h"

namespace kolo::comm::detail {

// Throws InvalidArgument unless `data` holds at least `count` elements of `type`; returns the
// byte count.
size_t checked_bytes(const Communicator& comm, const char* collective, size_t data_bytes,
                     size_t count, DataType type);

// Throws InvalidArgument unless 0 <= root < size.
void check_root(const Communicator& comm, const char* collective, int root);

// allgatherv's arguments (one block size per rank, `mine` of this rank's size, `out` large
// enough); returns each block's byte offset in `out`, plus the total at the end.
std::vector<size_t> checked_blocks(const Communicator& comm, const char* collective,
                                   ConstBytes mine, Bytes out,
                                   std::span<const size_t> bytes_per_rank);

// reducescatter's arguments (one count per rank, `data` holding their sum, `out` this rank's
// block); returns each block's first element in `data`, plus the total at the end.
std::vector<size_t> checked_reducescatter(const Communicator& comm, const char* collective,
                                          ConstBytes data, std::span<const size_t> counts,
                                          DataType type, Bytes out);

// Where each of a rank's blocks starts when they lie back to back, plus the total at the end.
// Inline up to kInlineBlocks blocks: a tiny alltoall takes a fraction of a microsecond, of which
// heap allocations were a noticeable part; on the heap beyond. Neither copied nor moved (it may
// point into itself): made where it is used.
class BlockOffsets {
 public:
  explicit BlockOffsets(std::span<const size_t> sizes);
  BlockOffsets(const BlockOffsets&) = delete;
  BlockOffsets& operator=(const BlockOffsets&) = delete;
  size_t operator[](size_t block) const { return starts_[block]; }

 private:
  static constexpr size_t kInlineBlocks = 16;
  std::array<size_t, kInlineBlocks + 1> inline_{};
  std::vector<size_t> heap_;
  size_t* starts_;
};

// alltoallv's arguments; each destination's block offset in `in` and each source's in `out`
// (plus the totals at the end).
struct AlltoallOffsets {
  BlockOffsets send;
  BlockOffsets recv;
};
AlltoallOffsets checked_alltoall(const Communicator& comm, const char* collective, ConstBytes in,
                                 std::span<const size_t> send_bytes, Bytes out,
                                 std::span<const size_t> recv_bytes);

}  // namespace kolo::comm::detail
