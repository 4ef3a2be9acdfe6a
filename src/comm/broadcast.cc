// broadcast: the host's shared-memory arena from 16 KiB when the group is exactly one host's
// ranks and the host has a CPU per rank (see detail::arena_serves); else, for large buffers on 3
// or more ranks, a pipelined chain (broadcast_chain.cc), for medium ones on 8 or more scatter +
// allgather (broadcast_scatter_allgather.cc; broadcast_choice.h says from which sizes); else a
// binomial tree from any root. Tree: ranks are renumbered relative to the root; a rank
// receives from the rank that differs in its lowest set bit and forwards to the ranks below it in
// the tree. Large buffers are cut into segments (the chain's chunks) so a rank forwards segment k
// to its children while segment k+1 is still arriving from its parent (pipelining the tree's
// depth).
#include <algorithm>
#include <array>
#include <span>

#include "comm/arena_wait.h"
#include "comm/broadcast_choice.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/pieces.h"
#include "comm/single_copy.h"

namespace kolo::comm {

namespace {
constexpr size_t kSegmentBytes = kBroadcastChunkBytes;
constexpr size_t kArenaBroadcastMinBytes = size_t{16} * 1024;
constexpr size_t kMaxChildren = 31;  // ranks are ints
}  // namespace

void broadcast(Communicator& comm, Bytes data, int root) {
  // Small buffers, or more ranks than CPUs: the tree. The arena's root runs at most a step ahead
  // of its receivers, the tree's a whole link buffer, which back-to-back small broadcasts use:
  // measured at np 2 on a loaded machine (others' builds), 8 B took 1-3.8 us through the arena and
  // 0.2-0.5 us down the tree, equal from 4 KiB; at np 3 on 2 cores 2 us (a context switch per
  // step) against 0.07 us.
  if (data.size() >= kArenaBroadcastMinBytes &&
      detail::arena_serves(comm, data.size(), /*oversubscribed_limit=*/0)) {
    return broadcast_shared_memory(comm, data, root);
  }
  // More ranks than CPUs, a large buffer: the receivers read the root's buffer from its memory.
  if (detail::oversubscribed_single_copy(comm, data.size())) {
    return broadcast_single_copy(comm, data, root);
  }
  // Same on every rank: size and group size only.
  if (data.size() >= broadcast_chain_limit(comm.size())) return broadcast_chain(comm, data, root);
  if (data.size() >= broadcast_scatter_allgather_limit(comm.size())) {
    return broadcast_scatter_allgather(comm, data, root);
  }
  broadcast_tree(comm, data, root);
}

void broadcast_tree(Communicator& comm, Bytes data, int root) {
  detail::check_root(comm, "broadcast", root);
  const int n = comm.size();
  if (n == 1 || data.empty()) return;

  const int relative = (comm.rank() - root + n) % n;
  auto actual = [&](int r) { return (r + root) % n; };
  int parent = -1;
  int bit = 1;
  for (; bit < n; bit <<= 1) {
    if (relative & bit) {
      parent = actual(relative - bit);
      break;
    }
  }
  // Fixed arrays, not vectors: a small broadcast is a fraction of a microsecond, and a heap
  // allocation per call was a visible part of it. A rank has at most one child per bit of n.
  std::array<int, kMaxChildren> children{};  // largest subtree first
  size_t child_count = 0;
  for (bit >>= 1; bit > 0; bit >>= 1) {
    if (relative + bit < n) children[child_count++] = actual(relative + bit);
  }

  std::array<SendOp, kMaxChildren> send_ops{};
  auto sends_of = [&](ConstBytes piece) {
    for (size_t c = 0; c < child_count; ++c) send_ops[c] = {children[c], piece};
    return std::span<const SendOp>(send_ops.data(), child_count);
  };
  if (parent < 0) {  // the root has everything already: feed all children at once
    comm.exchange(sends_of(data), {});
    return;
  }
  const size_t segments = detail::piece_count(data.size(), kSegmentBytes);
  auto segment = [&](size_t k) { return detail::piece_of(data, k, kSegmentBytes); };
  for (size_t k = 0; k <= segments; ++k) {
    const std::span<const SendOp> sends =
        k > 0 ? sends_of(segment(k - 1)) : std::span<const SendOp>{};
    if (k < segments) {
      const RecvOp recv{parent, segment(k)};
      comm.exchange(sends, {&recv, 1});
    } else if (child_count > 0) {
      comm.exchange(sends, {});
    }
  }
}

}  // namespace kolo::comm
