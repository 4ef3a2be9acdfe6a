// Reduce-scatter for the ranks of one host through the host's shared-memory arena. A slot half is
// cut into one region per rank; in step k every rank copies the k-th region-sized piece of every
// other rank's block into that rank's region of its own slot half k % 2, and after one barrier
// (detail::finish_step_writes) rank r folds its piece of every other slot's region r into `out`:
// its own values first (straight from `data`), then the others in rank order. Each block's result
// is computed on its own rank only, in one fixed order. One barrier per step and no second pass,
// where the ring needs size-1 rounds with a handshake each.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "base/copy_bytes.h"
#include "base/errors.h"
#include "comm/arena_wait.h"
#include "comm/collective_arena.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "kernels/reduce.h"

namespace kolo::comm {

void reducescatter_shared_memory(Communicator& comm, Bytes data, std::span<const size_t> counts,
                                 DataType type, ReduceOp op, Bytes out) {
  const kernels::ReduceFn combine = kernels::reduce_function(type, op);
  const std::vector<size_t> first =
      detail::checked_reducescatter(comm, "reducescatter_shared_memory", data, counts, type, out);
  CollectiveArena& collective = detail::required_arena(comm, "reducescatter_shared_memory");
  const int n = comm.size();
  const int self = collective.host.slot;
  const size_t element = dtype_size(type);
  const size_t my_count = counts[static_cast<size_t>(self)];
  const std::byte* const own = data.data() + first[static_cast<size_t>(self)] * element;
  if (my_count > 0 && own != out.data()) move_bytes(out.data(), own, my_count * element);
  if (n == 1) return;
  transport::SharedArena& arena = *collective.host.arena;
  // Region size in elements, a multiple of 64 bytes where the element allows (whole lines).
  size_t region = arena.chunk_bytes() / static_cast<size_t>(n) / element;
  if (region * element > 64) region -= region % std::max<size_t>(1, 64 / element);
  if (region == 0) {
    throw InvalidArgument(fmt::format(
        "rank {}: reducescatter_shared_memory: an arena slot of {} bytes has no room for {} ranks",
        comm.rank(), arena.chunk_bytes(), n));
  }
  const size_t largest = *std::max_element(counts.begin(), counts.end());
  for (size_t done = 0; done < largest; done += region) {
    const uint64_t step = collective.steps++;
    const int half = static_cast<int>(step % 2);
    auto piece = [&](int b) {  // elements of block b this step moves
      const size_t count = counts[static_cast<size_t>(b)];
      return done < count ? std::min(region, count - done) : 0;
    };
    detail::before_writing(comm, collective, step);
    std::byte* const slot = arena.slot(self, half);
    for (int b = 0; b < n; ++b) {
      if (const size_t elements = piece(b); b != self && elements > 0) {
        copy_bytes(slot + static_cast<size_t>(b) * region * element,
                   data.data() + (first[static_cast<size_t>(b)] + done) * element,
                   elements * element);
      }
    }
    detail::finish_step_writes(comm, collective, step);
    if (const size_t elements = piece(self); elements > 0) {
      std::byte* const into = out.data() + done * element;
      for (int r = 0; r < n; ++r) {
        if (r != self) {
          combine(into, arena.slot(r, half) + static_cast<size_t>(self) * region * element,
                  elements);
        }
      }
    }
  }
}

}  // namespace kolo::comm
