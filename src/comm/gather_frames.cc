// gather_frames: every rank sends one length-prefixed frame to the root, which receives them all
// concurrently (all headers at once, then all bodies at once), so one slow rank does not
// serialise the others.
#include <cstring>
#include <vector>

#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "transport/frame_header.h"

namespace kolo::comm {

std::vector<std::vector<std::byte>> gather_frames(Communicator& comm, ConstBytes mine, int root) {
  detail::check_root(comm, "gather_frames", root);
  const int n = comm.size();
  const int rank = comm.rank();
  if (rank != root) {
    comm.send_frame(root, mine);
    return {};
  }
  std::vector<std::vector<std::byte>> frames(static_cast<size_t>(n));
  frames[root].assign(mine.begin(), mine.end());
  if (n == 1) return frames;

  struct Header {
    std::byte bytes[transport::kFrameHeaderSize];
  };
  std::vector<Header> headers(static_cast<size_t>(n));
  std::vector<RecvOp> recvs;
  for (int r = 0; r < n; ++r) {
    if (r != root) recvs.push_back({r, Bytes(headers[r].bytes)});
  }
  comm.exchange({}, recvs);

  recvs.clear();
  for (int r = 0; r < n; ++r) {
    if (r == root) continue;
    const uint64_t length = transport::decode_frame_header(
        headers[r].bytes, comm.options().frame_limit, comm.peer(r).peer_description().c_str());
    frames[r].resize(length);
    recvs.push_back({r, frames[r]});
  }
  comm.exchange({}, recvs);
  return frames;
}

}  // namespace kolo::comm
