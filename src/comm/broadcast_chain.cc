// broadcast_chain: the root's data streams along the ranks in order from the root (root, root+1,
// ...), cut into chunks; every rank but the ends receives chunk k from the rank before it while
// forwarding chunk k - 1 to the rank after it. Every link carries the buffer once, against the
// binomial tree's depth times through the root's link, at the price of p - 2 extra steps for the
// last chunk to reach the end (NCCL's ring broadcast; broadcast_choice.h says from where it
// wins). Ranks in order also keep a host's ranks next to each other, so the chain crosses the
// network once per host.
#include <array>

#include "comm/broadcast_choice.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/pieces.h"

namespace kolo::comm {

void broadcast_chain(Communicator& comm, Bytes data, int root) {
  detail::check_root(comm, "broadcast_chain", root);
  const int n = comm.size();
  if (n == 1 || data.empty()) return;
  const int relative = (comm.rank() - root + n) % n;
  const int previous = (comm.rank() + n - 1) % n;
  const int next = (comm.rank() + 1) % n;
  if (relative == 0) {  // the root has every chunk already: the link streams them in order
    const SendOp send{next, data};
    comm.exchange({&send, 1}, {});
    return;
  }
  if (relative == n - 1) {  // the end forwards nothing: receive in one go
    const RecvOp recv{previous, data};
    comm.exchange({}, {&recv, 1});
    return;
  }
  const size_t chunks = detail::piece_count(data.size(), kBroadcastChunkBytes);
  auto chunk = [&](size_t k) { return detail::piece_of(data, k, kBroadcastChunkBytes); };
  for (size_t k = 0; k <= chunks; ++k) {
    std::array<SendOp, 1> send{};
    std::array<RecvOp, 1> recv{};
    const size_t sends = k > 0 ? 1 : 0;
    const size_t recvs = k < chunks ? 1 : 0;
    if (sends) send[0] = {next, chunk(k - 1)};
    if (recvs) recv[0] = {previous, chunk(k)};
    comm.exchange({send.data(), sends}, {recv.data(), recvs});
  }
}

}  // namespace kolo::comm
