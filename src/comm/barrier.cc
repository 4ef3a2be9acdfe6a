// Dissemination barrier: in round k rank r signals r+2^k and waits for r-2^k; after
// ceil(log2(size)) rounds every rank has heard, directly or not, from every other. The 1-byte
// token carries the round number so ranks that fell out of step are caught, not silently matched.
#include <fmt/format.h>

#include "base/errors.h"
#include "comm/collectives.h"

namespace kolo::comm {

void barrier(Communicator& comm) {
  const int n = comm.size();
  const int rank = comm.rank();
  uint8_t round = 0;
  for (int distance = 1; distance < n; distance <<= 1, ++round) {
    const std::byte token{round};
    std::byte received{0xff};
    const int from = (rank - distance + n) % n;
    comm.send_recv((rank + distance) % n, {&token, 1}, from, {&received, 1});
    if (received != token) {
      throw ProtocolError(
          fmt::format("rank {}: barrier round {} received token {} from {} (peers out of step)",
                      rank, round, static_cast<int>(received), comm.peer(from).peer_description()));
    }
  }
}

}  // namespace kolo::comm
