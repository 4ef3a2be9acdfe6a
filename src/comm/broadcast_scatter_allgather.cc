// broadcast_scatter_allgather (van de Geijn's broadcast, MPICH's for medium and large buffers):
// the root's buffer is cut into p blocks; a binomial tree scatters them (a rank receives the
// blocks of its whole subtree from its parent and passes each child its subtree's), then a ring
// allgather gives every rank every block. Each link carries about 2n (p - 1) / p bytes, against
// the binomial tree's root sending n once per level, in ceil(log2 p) + p - 1 steps; the chain
// carries n once but only once the buffer has many chunks (broadcast_choice.h: where each wins).
// Ranks and blocks are numbered relative to the root; block j is the j-th of p near-equal byte
// ranges of the buffer, so a subtree's blocks are one contiguous range.
#include <algorithm>

#include "comm/collective_checks.h"
#include "comm/collectives.h"

namespace kolo::comm {

void broadcast_scatter_allgather(Communicator& comm, Bytes data, int root) {
  detail::check_root(comm, "broadcast_scatter_allgather", root);
  const int n = comm.size();
  if (n == 1 || data.empty()) return;
  const int relative = (comm.rank() - root + n) % n;
  auto actual = [&](int r) { return (r + root) % n; };
  const auto blocks = static_cast<size_t>(n);
  auto first_byte = [&](int b) {
    const auto block = static_cast<size_t>(b);
    return data.size() / blocks * block + std::min(block, data.size() % blocks);
  };
  auto range = [&](int low, int high) {  // blocks [low, high), high capped at n
    high = std::min(high, n);
    return data.subspan(first_byte(low), first_byte(high) - first_byte(low));
  };

  // Scatter: the subtree of relative rank r != 0 is [r, r + lowest set bit of r).
  int span = 1;
  while (span < n) span <<= 1;  // the root's subtree: everything
  if (relative != 0) {
    span = relative & -relative;
    comm.recv(actual(relative - span), range(relative, relative + span));
  }
  for (int bit = span >> 1; bit > 0; bit >>= 1) {
    const int child = relative + bit;
    if (child < n) comm.send(actual(child), range(child, child + bit));
  }

  // Ring allgather of the blocks: in step s pass block r - s on, receive block r - s - 1.
  const int right = actual((relative + 1) % n);
  const int left = actual((relative + n - 1) % n);
  for (int step = 0; step < n - 1; ++step) {
    const int give = (relative - step + n) % n;
    const int take = (relative - step - 1 + 2 * n) % n;
    comm.send_recv(right, range(give, give + 1), left, range(take, take + 1));
  }
}

}  // namespace kolo::comm
