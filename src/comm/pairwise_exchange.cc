#include "comm/pairwise_exchange.h"

#include <algorithm>
#include <cstring>

#include "base/copy_bytes.h"
#include "comm/pieces.h"

namespace kolo::comm::detail {

PowerOfTwoCore power_of_two_core(int rank, int group_size) {
  PowerOfTwoCore core;
  while (core.size * 2 <= group_size) core.size *= 2;
  core.extra = group_size - core.size;
  if (rank >= 2 * core.extra) {
    core.virtual_rank = rank - core.extra;
  } else if (rank % 2 == 1) {
    core.virtual_rank = rank / 2;
  }
  return core;
}

namespace {

// Whole elements only, so that a segment boundary never splits one.
size_t segment_bytes(size_t element) {
  return std::max<size_t>(1, kFoldSegmentBytes / element) * element;
}

// target = mine op theirs (mine_first) or theirs op mine, where `incoming` holds the partner's
// values (clobbered).
void fold(Bytes target, Bytes incoming, size_t element, kernels::ReduceFn combine,
          bool mine_first) {
  if (target.empty()) return;
  const size_t count = target.size() / element;
  if (mine_first) {
    combine(target.data(), incoming.data(), count);
  } else {
    combine(incoming.data(), target.data(), count);
    copy_bytes(target.data(), incoming.data(), target.size());  // one segment, still in cache
  }
}

}  // namespace

Bytes fold_scratch(Communicator& comm, size_t bytes, size_t element) {
  return comm.scratch(std::min(bytes, segment_bytes(element)));
}

void exchange_and_fold(Communicator& comm, int partner, ConstBytes outgoing, Bytes target,
                       size_t element, kernels::ReduceFn combine, bool mine_first, Bytes scratch) {
  const size_t segment = segment_bytes(element);
  const size_t segments = piece_count(std::max(outgoing.size(), target.size()), segment);
  for (size_t k = 0; k < segments; ++k) {
    const Bytes into = piece_of(target, k, segment);
    const Bytes incoming = scratch.first(into.size());
    comm.send_recv(partner, piece_of(outgoing, k, segment), partner, incoming);
    fold(into, incoming, element, combine, mine_first);
  }
}

void fold_extra_ranks_in(Communicator& comm, const PowerOfTwoCore& core, Bytes mine, size_t element,
                         kernels::ReduceFn combine, Bytes scratch) {
  const int rank = comm.rank();
  if (rank >= 2 * core.extra) return;
  if (rank % 2 == 0) {
    comm.send(rank + 1, mine);
    return;
  }
  const size_t segment = segment_bytes(element);
  for (size_t k = 0; k * segment < mine.size(); ++k) {
    const Bytes into = piece_of(mine, k, segment);
    const Bytes incoming = scratch.first(into.size());
    comm.recv(rank - 1, incoming);
    fold(into, incoming, element, combine, /*mine_first=*/true);
  }
}

void send_result_to_extra_ranks(Communicator& comm, const PowerOfTwoCore& core, Bytes mine) {
  const int rank = comm.rank();
  if (rank >= 2 * core.extra) return;
  if (rank % 2 == 0) {
    comm.recv(rank + 1, mine);
  } else {
    comm.send(rank - 1, mine);
  }
}

}  // namespace kolo::comm::detail
