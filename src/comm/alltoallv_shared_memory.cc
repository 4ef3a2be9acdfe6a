// Alltoallv for the ranks of one host through the host's shared-memory arena. A slot half holds a
// 64-byte header and then one region per rank; in step k every rank copies the k-th region-sized
// piece of its block for rank d into region d of its own slot half k % 2, and after one barrier
// (detail::finish_step_writes) copies its piece of region `self` of every other slot into `out`.
// A rank knows only its own row and column of the size matrix, so in the first step each also
// writes its largest block into its header: after that step's barrier every rank knows how many
// steps the largest block of all needs. One barrier per step instead of size-1 pairwise rounds.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/errors.h"
#include "comm/arena_wait.h"
#include "comm/collective_arena.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"

namespace kolo::comm {

namespace {
constexpr size_t kHeaderBytes = 64;
}  // namespace

void alltoallv_shared_memory(Communicator& comm, ConstBytes in, std::span<const size_t> send_bytes,
                             Bytes out, std::span<const size_t> recv_bytes) {
  const detail::AlltoallOffsets at =
      detail::checked_alltoall(comm, "alltoallv_shared_memory", in, send_bytes, out, recv_bytes);
  CollectiveArena& collective = detail::required_arena(comm, "alltoallv_shared_memory");
  const int n = comm.size();
  const int self = collective.host.slot;
  const auto me = static_cast<size_t>(self);
  if (send_bytes[me] > 0) {
    std::memmove(out.data() + at.recv[me], in.data() + at.send[me], send_bytes[me]);
  }
  if (n == 1) return;
  transport::SharedArena& arena = *collective.host.arena;
  const size_t region = (arena.chunk_bytes() - kHeaderBytes) / static_cast<size_t>(n) / 64 * 64;
  if (region == 0) {
    throw InvalidArgument(fmt::format(
        "rank {}: alltoallv_shared_memory: an arena slot of {} bytes has no room for {} ranks",
        comm.rank(), arena.chunk_bytes(), n));
  }
  uint64_t largest = 0;  // of every rank's blocks, known after the first step
  for (int r = 0; r < n; ++r) {
    if (r != self) {
      largest = std::max({largest, uint64_t{send_bytes[static_cast<size_t>(r)]},
                          uint64_t{recv_bytes[static_cast<size_t>(r)]}});
    }
  }
  auto piece = [&](size_t block, size_t done) {
    return done < block ? std::min(region, block - done) : 0;
  };
  for (size_t done = 0; done == 0 || done < largest; done += region) {
    const uint64_t step = collective.steps++;
    const int half = static_cast<int>(step % 2);
    detail::before_writing(comm, collective, step);
    std::byte* const slot = arena.slot(self, half);
    if (done == 0) std::memcpy(slot, &largest, sizeof(largest));
    for (int d = 0; d < n; ++d) {
      const auto i = static_cast<size_t>(d);
      if (const size_t bytes = piece(send_bytes[i], done); d != self && bytes > 0) {
        std::memcpy(slot + kHeaderBytes + i * region, in.data() + at.send[i] + done, bytes);
      }
    }
    detail::finish_step_writes(comm, collective, step);
    if (done == 0) {
      for (int r = 0; r < n; ++r) {
        uint64_t theirs = 0;
        std::memcpy(&theirs, arena.slot(r, half), sizeof(theirs));
        largest = std::max(largest, theirs);
      }
    }
    for (int s = 0; s < n; ++s) {
      const auto i = static_cast<size_t>(s);
      if (const size_t bytes = piece(recv_bytes[i], done); s != self && bytes > 0) {
        std::memcpy(out.data() + at.recv[i] + done,
                    arena.slot(s, half) + kHeaderBytes + me * region, bytes);
      }
    }
  }
}

}  // namespace kolo::comm
