// Allreduce for the ranks of one host in three flag rounds, reading peers' buffers straight from
// their memory (comm/single_copy.h) instead of stepping the buffer through the arena's slots:
//   1. every rank publishes where its buffer is and waits until all have;
//   2. each rank folds its 1/n slice of every rank's buffer in rank order (rank 0's values, then
//      rank 1's, ...; the peers' read from their memory a piece at a time), scales it and writes
//      it into its own buffer; then it waits until every rank has folded (so no rank still reads
//      an input slice that is about to be overwritten);
//   3. each rank reads the other slices, now results, from their owners' buffers into its own,
//      and leaves once every rank has read (its buffer is read until then).
// The arena's algorithm runs a barrier of every rank per slot-sized step: with more ranks than
// CPUs one of them is always descheduled at each, so large buffers took the ring over the links,
// which copies every byte into a link's buffer and out again per hop. Here there are three
// rounds whatever the size, and each rank copies (n - 1)/n of the buffer in and (n - 1)/n out
// once, folding the in-copy from a small cache-resident buffer.
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/copy_bytes.h"
#include "comm/arena_wait.h"
#include "comm/collective_arena.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/pieces.h"
#include "comm/single_copy.h"
#include "kernels/reduce.h"

namespace kolo::comm {

namespace {

// A slice is read and folded in pieces of this size: the pieces read stay in cache for the
// folds that follow.
constexpr size_t kFoldPieceBytes = size_t{64} * 1024;

}  // namespace

void allreduce_single_copy(Communicator& comm, Bytes data, size_t count, DataType type, ReduceOp op,
                           const kernels::ResultScale& scale) {
  detail::checked_bytes(comm, "allreduce_single_copy", data.size(), count, type);
  const kernels::ReduceFn combine = kernels::reduce_function(type, op);
  scale.check(type);
  CollectiveArena& collective = detail::required_arena(comm, "allreduce_single_copy");
  const int n = comm.size();
  const size_t element = dtype_size(type);
  if (n == 1 || count == 0) {
    scale.apply(data.data(), count, type);
    return;
  }
  const int self = collective.host.slot;
  const uint64_t published = collective.steps++;
  const int half = static_cast<int>(published % 2);
  detail::before_writing(comm, collective, published);
  detail::publish_block(collective, half, 0, data.data(), data.size());
  detail::finish_step_writes(comm, collective, published);

  const detail::Slice mine = detail::slice_of(count, n, self);
  std::byte* const own = data.data() + mine.begin * element;
  const size_t piece_elements = std::max<size_t>(1, kFoldPieceBytes / element);
  const size_t piece_bytes = std::min(mine.count, piece_elements) * element;
  // Rank 0's values, then rank 1's, ...: whichever rank folds an element, the same sequence.
  // Rank 0 folds into its own buffer; the others into `sum`, a piece read from rank 0.
  std::vector<std::byte> sum(self == 0 ? 0 : piece_bytes), theirs(piece_bytes);
  for (size_t done = 0; done < mine.count; done += piece_elements) {
    const size_t elements = std::min(piece_elements, mine.count - done);
    const size_t bytes = elements * element;
    const size_t from = (mine.begin + done) * element;  // in every rank's buffer
    std::byte* const out = own + done * element;
    std::byte* const into = self == 0 ? out : sum.data();
    if (self != 0) detail::read_block_range(comm, collective, 0, half, 0, from, into, bytes);
    for (int r = 1; r < n; ++r) {
      if (r == self) {
        combine(into, out, elements);
        continue;
      }
      detail::read_block_range(comm, collective, r, half, 0, from, theirs.data(), bytes);
      combine(into, theirs.data(), elements);
    }
    scale.apply(into, elements, type);
    if (into != out) copy_bytes(out, into, bytes);
  }

  // Every rank has folded (a second step, with nothing written: its `ready` is the barrier).
  const uint64_t folded = collective.steps++;
  detail::before_writing(comm, collective, folded);
  detail::finish_step_writes(comm, collective, folded);
  for (int k = 1; k < n; ++k) {  // from the next rank on, as allgatherv's single copy
    const int r = (self + k) % n;
    const detail::Slice theirs = detail::slice_of(count, n, r);
    if (theirs.count == 0) continue;
    detail::read_block_range(comm, collective, r, half, 0, theirs.begin * element,
                             data.data() + theirs.begin * element, theirs.count * element);
  }
  detail::finish_step_reads(comm, collective, folded);
}

}  // namespace kolo::comm
