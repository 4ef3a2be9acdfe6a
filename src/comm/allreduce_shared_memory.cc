// Allreduce for the ranks of one host, straight through the host's shared-memory arena instead
// of a ring of copies. The buffer goes in steps of at most one slot half (so a step stays in
// cache); step s uses half s % 2 of every slot:
//   1. each rank copies its piece into its own slot (all of it for small pieces; all but its own
//      1/n slice otherwise) and posts `ready` = s + 1, then waits for everyone's `ready`;
//   2a. small pieces: every rank folds all slots in rank order into its buffer (one barrier;
//       arena_fold_choice.h says when);
//   2b. larger pieces: each rank folds its slice of every other slot into its own buffer (its own
//       values first, then the others in rank order), copies the result into its slot, posts
//       `reduced`, waits for everyone's `reduced`, and copies the other slices out of their
//       owners' slots.
// The result's scale (Average's division) is applied right after the fold: to the whole piece
// in 2a, to the rank's own slice in 2b.
// The buffer may be several tensors (a fused allreduce, PieceList): each rank copies from their
// inputs and folds and copies into their outputs directly, so a fused group needs no fusion
// buffer, and the two copies into and out of one, on this path.
// A large step's three memory passes (the copy into the slot, the fold of the rank's slice, the
// copies out) are each cut into parts for the runtime's helper threads
// (Communicator::work_splitter, step_parts.h); the flags are still posted and waited for by this
// thread alone, after the parts. Every element is computed by one fixed sequence of operations on
// the same inputs, so all ranks end with identical bits. Reuse of a half: see
// detail::before_writing.

#include <algorithm>
#include <cstring>

#include "base/copy_bytes.h"
#include "comm/arena_fold_choice.h"
#include "comm/arena_wait.h"
#include "comm/collective_arena.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/piece_list.h"
#include "comm/pieces.h"
#include "comm/step_parts.h"
#include "kernels/reduce.h"

namespace kolo::comm {

namespace {

using transport::SharedArena;

}  // namespace

void allreduce_shared_memory(Communicator& comm, Bytes data, size_t count, DataType type,
                             ReduceOp op, const kernels::ResultScale& scale) {
  detail::checked_bytes(comm, "allreduce_shared_memory", data.size(), count, type);
  allreduce_shared_memory(comm, PieceList(data), type, op, scale);
}

void allreduce_shared_memory(Communicator& comm, const PieceList& pieces, DataType type,
                             ReduceOp op, const kernels::ResultScale& scale) {
  const kernels::ReduceFn combine = kernels::reduce_function(type, op);
  const size_t element = dtype_size(type);
  const size_t count = pieces.bytes() / element;
  scale.check(type);
  CollectiveArena* const collective = &detail::required_arena(comm, "allreduce_shared_memory");
  const int n = comm.size();
  if (n == 1 || count == 0) {
    // Nothing to combine: the result is the input, scaled.
    pieces.for_each(0, pieces.bytes(),
                    [&](const BufferPiece& p, size_t offset, size_t, size_t len) {
                      if (p.input != p.output) copy_bytes(p.output + offset, p.input + offset, len);
                      scale.apply(p.output + offset, len / element, type);
                    });
    return;
  }
  SharedArena& arena = *collective->host.arena;
  const int self = collective->host.slot;
  const size_t step_elements = arena.chunk_bytes() / element;

  for (size_t done = 0; done < count; done += step_elements) {
    const size_t elements = std::min(step_elements, count - done);
    const size_t bytes = elements * element;
    const size_t at = done * element;  // where the step's piece begins in the whole buffer
    const uint64_t step = collective->steps++;
    const int half = static_cast<int>(step % 2);
    const bool fold_whole = detail::folds_whole(bytes, elements, n, comm.oversubscribed(),
                                                collective->fold_whole_bytes);
    const detail::Slice mine =
        fold_whole ? detail::Slice{0, 0} : detail::slice_of(elements, n, self);
    const size_t mine_begin = mine.begin * element;
    const size_t mine_end = mine_begin + mine.count * element;
    // Peers read everything but this rank's own slice, which it folds straight from its buffer.
    std::byte* const slot = arena.slot(self, half);
    detail::before_writing(comm, *collective, step);
    // A large step's copies and fold are shared with the splitter's threads (step_parts.h).
    auto in_parts = [&](size_t begin, size_t end, size_t hole_begin, size_t hole_end,
                        FunctionRef<void(size_t, size_t)> fn) {
      detail::for_each_part(comm.work_splitter(), comm.split_part_bytes(), element, begin, end,
                            hole_begin, hole_end, fn);
    };
    in_parts(0, bytes, mine_begin, mine_end,
             [&](size_t from, size_t len) { pieces.gather(slot + from, at + from, len); });
    detail::finish_step_writes(comm, *collective, step);

    if (fold_whole) {
      // Rank 0's values first, then the others' in rank order, straight into the outputs.
      pieces.scatter(arena.slot(0, half), at, bytes);
      pieces.for_each(at, bytes, [&](const BufferPiece& p, size_t offset, size_t in, size_t len) {
        std::byte* const out = p.output + offset;
        for (int r = 1; r < n; ++r) combine(out, arena.slot(r, half) + in, len / element);
        scale.apply(out, len / element, type);  // every rank computed the whole piece
      });
      continue;
    }
    // The rank's own slice: its own values first (folded in its output, in cache), then the
    // others' in rank order, scaled, then copied into its slot for the others to read.
    in_parts(mine_begin, mine_end, 0, 0, [&](size_t part_begin, size_t part_bytes) {
      pieces.for_each(at + part_begin, part_bytes,
                      [&](const BufferPiece& p, size_t offset, size_t in, size_t len) {
                        std::byte* const out = p.output + offset;
                        if (p.input != p.output) copy_bytes(out, p.input + offset, len);
                        const size_t from = part_begin + in;
                        for (int r = 0; r < n; ++r) {
                          if (r != self) combine(out, arena.slot(r, half) + from, len / element);
                        }
                        scale.apply(out, len / element, type);
                        copy_bytes(slot + from, out, len);
                      });
    });
    arena.post(self, SharedArena::Flag::reduced, step + 1);
    detail::wait_for_members(comm, *collective, SharedArena::Flag::reduced, step + 1);
    // The other slices out of their owners' slots: a part may span several owners.
    in_parts(0, bytes, mine_begin, mine_end, [&](size_t part_begin, size_t part_bytes) {
      const size_t part_end = part_begin + part_bytes;
      for (int r = 0; r < n; ++r) {
        const detail::Slice theirs = detail::slice_of(elements, n, r);
        const size_t from = std::max(part_begin, theirs.begin * element);
        const size_t to = std::min(part_end, (theirs.begin + theirs.count) * element);
        if (r != self && to > from)
          pieces.scatter(arena.slot(r, half) + from, at + from, to - from);
      }
    });
  }
}

}  // namespace kolo::comm
