// Allreduce for the ranks of one host, straight through the host's shared-memory arena instead
// of a ring of copies. The buffer goes in steps of at most one slot half (so a step stays in
// cache); step s uses half s % 2 of every slot:
//   1. each rank copies its piece into its own slot (all of it for small pieces; all but its own
//      1/n slice otherwise) and posts `ready` = s + 1, then waits for everyone's `ready`;
//   2a. small pieces: every rank folds all slots in rank order into its buffer (one barrier);
//   2b. larger pieces: each rank folds its slice of every other slot into its own buffer (its own
//       values first, then the others in rank order), copies the result into its slot, posts
//       `reduced`, waits for everyone's `reduced`, and copies the other slices out of their
//       owners' slots.
// The result's scale (Average's division) is applied right after the fold: to the whole piece
// in 2a, to the rank's own slice in 2b.
// Every element is computed by one fixed sequence of operations on the same inputs, so all ranks
// end with identical bits. Reuse of a half: see detail::before_writing.

#include <algorithm>
#include <cstring>

#include "comm/arena_wait.h"
#include "comm/collective_arena.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "kernels/reduce.h"

namespace kolo::comm {

namespace {

using transport::SharedArena;

// Up to this size a piece is folded whole by every rank: the second barrier of the sliced path
// costs more than folding a few extra cache lines.
constexpr size_t kFoldWholeBytes = size_t{16} * 1024;

struct Slice {
  size_t begin;  // elements
  size_t count;
};

Slice slice_of(size_t elements, int ranks, int r) {
  const auto n = static_cast<size_t>(ranks);
  const auto i = static_cast<size_t>(r);
  return {elements / n * i + std::min(i, elements % n), elements / n + (i < elements % n ? 1 : 0)};
}

}  // namespace

void allreduce_shared_memory(Communicator& comm, Bytes data, size_t count, DataType type,
                             ReduceOp op, const kernels::ResultScale& scale) {
  const kernels::ReduceFn combine = kernels::reduce_function(type, op);
  detail::checked_bytes(comm, "allreduce_shared_memory", data.size(), count, type);
  scale.check(type);
  CollectiveArena* const collective = &detail::required_arena(comm, "allreduce_shared_memory");
  const int n = comm.size();
  if (n == 1 || count == 0) return scale.apply(data.data(), count, type);
  SharedArena& arena = *collective->host.arena;
  const int self = collective->host.slot;
  const size_t element = dtype_size(type);
  const size_t step_elements = arena.chunk_bytes() / element;

  for (size_t done = 0; done < count; done += step_elements) {
    const size_t elements = std::min(step_elements, count - done);
    const size_t bytes = elements * element;
    std::byte* const piece = data.data() + done * element;
    const uint64_t step = collective->steps++;
    const int half = static_cast<int>(step % 2);
    const bool fold_whole = bytes <= kFoldWholeBytes || elements < static_cast<size_t>(n);
    const Slice mine = fold_whole ? Slice{0, 0} : slice_of(elements, n, self);
    const size_t mine_begin = mine.begin * element;
    const size_t mine_end = mine_begin + mine.count * element;
    // Peers read everything but this rank's own slice, which it folds straight from its buffer.
    std::byte* const slot = arena.slot(self, half);
    detail::before_writing(comm, *collective, step);
    std::memcpy(slot, piece, mine_begin);
    std::memcpy(slot + mine_end, piece + mine_end, bytes - mine_end);
    detail::finish_step_writes(comm, *collective, step);

    if (fold_whole) {
      if (self != 0) std::memcpy(piece, arena.slot(0, half), bytes);  // rank 0's is there
      for (int r = 1; r < n; ++r) combine(piece, arena.slot(r, half), elements);
      scale.apply(piece, elements, type);  // every rank computed the whole piece
      continue;
    }
    for (int r = 0; r < n; ++r) {
      if (r != self) combine(piece + mine_begin, arena.slot(r, half) + mine_begin, mine.count);
    }
    scale.apply(piece + mine_begin, mine.count, type);  // in cache, before the others copy it
    std::memcpy(slot + mine_begin, piece + mine_begin, mine_end - mine_begin);
    arena.post(self, SharedArena::Flag::reduced, step + 1);
    detail::wait_for_members(comm, *collective, SharedArena::Flag::reduced, step + 1);
    for (int r = 0; r < n; ++r) {
      if (r == self) continue;
      const Slice theirs = slice_of(elements, n, r);
      const size_t offset = theirs.begin * element;
      std::memcpy(piece + offset, arena.slot(r, half) + offset, theirs.count * element);
    }
  }
}

}  // namespace kolo::comm
