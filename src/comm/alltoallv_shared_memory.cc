// Alltoallv for the ranks of one host through the host's shared-memory arena. A slot half holds a
// 16-byte header and then one region per rank; in step k every rank copies the k-th region-sized
// piece of its block for rank d into its region for d in its own slot half k % 2, and then
// copies its piece of every other slot's region for `self` into `out`. A sender's region for rank
// d is number (d - sender - 1) mod n: its next rank's comes right after the header, in the
// header's cache line, so a tiny alltoall at np 2 reads one line of its peer's slot, not two (the
// header's and the block's).
// A rank knows only its own row and column of the size matrix, so in the first step each also
// writes its largest block into its header: after that step every rank knows how many steps the
// largest block of all needs. One barrier per later step instead of size-1 pairwise rounds. The
// first step waits for each sender alone and takes its block as soon as it posted, and a rank
// copies its own block while a sender is still behind: with more ranks than CPUs the one that
// arrives last (it was descheduled) finds every block ready, and the others did their own copy
// meanwhile instead of yielding (np 3 on 2 cores, 4 MiB: one rank's barrier wait was its peers'
// copy time).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "base/copy_bytes.h"
#include "base/errors.h"
#include "comm/arena_wait.h"
#include "comm/collective_arena.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/single_copy.h"

namespace kolo::comm {

namespace {
constexpr size_t kHeaderBytes = 16;

// The first step's header in each slot half.
struct Header {
  uint64_t largest_copied;  // the rank's largest block copied through the slots (0: none)
  uint64_t by_reference;    // 1: its blocks are read from its memory (region d: a PeerBlock)
};
static_assert(sizeof(Header) == kHeaderBytes);
}  // namespace

void alltoallv_shared_memory(Communicator& comm, ConstBytes in, std::span<const size_t> send_bytes,
                             Bytes out, std::span<const size_t> recv_bytes) {
  const detail::AlltoallOffsets at =
      detail::checked_alltoall(comm, "alltoallv_shared_memory", in, send_bytes, out, recv_bytes);
  CollectiveArena& collective = detail::required_arena(comm, "alltoallv_shared_memory");
  const int n = comm.size();
  const int self = collective.host.slot;
  const auto me = static_cast<size_t>(self);
  bool own_copied = send_bytes[me] == 0;
  auto copy_own = [&] {
    if (!own_copied) move_bytes(out.data() + at.recv[me], in.data() + at.send[me], send_bytes[me]);
    own_copied = true;
  };
  if (n == 1) return copy_own();
  transport::SharedArena& arena = *collective.host.arena;
  const size_t region = (arena.chunk_bytes() - kHeaderBytes) / static_cast<size_t>(n) / 64 * 64;
  // Where `sender`'s region for `dest` begins in its slot half.
  auto region_at = [&](int sender, int dest) {
    return kHeaderBytes + static_cast<size_t>((dest - sender - 1 + n) % n) * region;
  };
  if (region == 0) {
    throw InvalidArgument(fmt::format(
        "rank {}: alltoallv_shared_memory: an arena slot of {} bytes has no room for {} ranks",
        comm.rank(), arena.chunk_bytes(), n));
  }
  // A rank whose largest block for another is past the single-copy threshold
  // (detail::single_copy_blocks_from) publishes where
  // each of its blocks is (region d: a detail::PeerBlock for rank d) instead of copying them in,
  // and each destination reads its block from the sender's memory in the first step. The
  // header says which a rank did, and its largest copied block, whose steps every rank runs.
  // The probe whether the job may is collective: at the first alltoallv, whatever its sizes.
  uint64_t largest_send = 0;
  for (int d = 0; d < n; ++d) {
    if (d != self)
      largest_send = std::max<uint64_t>(largest_send, send_bytes[static_cast<size_t>(d)]);
  }
  const bool by_reference = largest_send >= detail::single_copy_blocks_from(comm, collective);
  Header header{by_reference ? 0 : largest_send, by_reference ? 1u : 0u};
  uint64_t largest = header.largest_copied;  // of every rank's copied blocks, after the first step
  bool any_by_reference = by_reference;      // this rank's or any sender's blocks
  // Sized at the first sender found reading by reference: a tiny alltoall allocates nothing.
  std::vector<bool> sender_by_reference;
  auto reads_by_reference = [&](size_t sender) {
    return !sender_by_reference.empty() && sender_by_reference[sender];
  };
  uint64_t first_step = 0;
  auto piece = [&](size_t block, size_t done) {
    return done < block ? std::min(region, block - done) : 0;
  };
  for (size_t done = 0; done == 0 || done < largest; done += region) {
    const uint64_t step = collective.steps++;
    const int half = static_cast<int>(step % 2);
    detail::before_writing(comm, collective, step);
    std::byte* const slot = arena.slot(self, half);
    if (done == 0) {
      first_step = step;
      std::memcpy(slot, &header, sizeof(header));
    }
    for (int d = 0; d < n; ++d) {
      const auto i = static_cast<size_t>(d);
      if (d == self || send_bytes[i] == 0) continue;
      if (by_reference) {
        if (done == 0) {
          detail::publish_block(collective, half, region_at(self, d), in.data() + at.send[i],
                                send_bytes[i]);
        }
      } else if (const size_t bytes = piece(send_bytes[i], done); bytes > 0) {
        copy_bytes(slot + region_at(self, d), in.data() + at.send[i] + done, bytes);
      }
    }
    // Sender s's piece of this step for `self`: read from its memory (first step only) or
    // copied from its slot.
    auto take = [&](int s) {
      const auto i = static_cast<size_t>(s);
      if (recv_bytes[i] == 0) return;
      if (reads_by_reference(i)) {
        if (done == 0) {
          detail::read_block(comm, collective, s, half, region_at(s, self), out.data() + at.recv[i],
                             recv_bytes[i]);
        }
      } else if (const size_t bytes = piece(recv_bytes[i], done); bytes > 0) {
        copy_bytes(out.data() + at.recv[i] + done, arena.slot(s, half) + region_at(s, self), bytes);
      }
    };
    // From the next rank on: the readers of one sender's memory are spread over the senders
    // (each read walks and pins the sender's pages, under locks of its address space).
    if (done == 0) {
      auto first_take = [&](int s) {
        Header theirs{};
        std::memcpy(&theirs, arena.slot(s, half), sizeof(theirs));
        largest = std::max(largest, theirs.largest_copied);
        if (theirs.by_reference != 0) {
          sender_by_reference.resize(static_cast<size_t>(n), false);
          sender_by_reference[static_cast<size_t>(s)] = true;
          any_by_reference = true;
        }
        take(s);
      };
      // std::ref: the std::functions refer to the lambdas (no allocation per call).
      detail::take_as_posted(comm, collective, step, std::ref(copy_own), std::ref(first_take));
    } else {
      detail::finish_step_writes(comm, collective, step);
      for (int k = 1; k < n; ++k) take((self + k) % n);
    }
  }
  // A sender's blocks stay valid until every member has read what it reads by reference (this
  // rank's own copy, if still to do, runs after it said it has read its peers').
  if (!any_by_reference) return copy_own();
  detail::finish_step_reads(comm, collective, first_step, std::ref(copy_own));
}

}  // namespace kolo::comm
