// broadcast_frame: the root's frame travels down the broadcast tree in two passes, first its
// 8-byte length (checked against the frame limit before anything is allocated), then its bytes.
#include <fmt/format.h>

#include "base/errors.h"
#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "transport/frame_header.h"

namespace kolo::comm {

std::vector<std::byte> broadcast_frame(Communicator& comm, std::vector<std::byte> data, int root) {
  detail::check_root(comm, "broadcast_frame", root);
  if (comm.size() == 1) return data;
  const bool is_root = comm.rank() == root;
  std::byte header[transport::kFrameHeaderSize] = {};
  if (is_root) {
    if (data.size() > comm.options().frame_limit) {
      throw InvalidArgument(
          fmt::format("rank {}: broadcast frame of {} bytes exceeds the limit of {}", comm.rank(),
                      data.size(), comm.options().frame_limit));
    }
    transport::encode_frame_header(data.size(), header);
  }
  broadcast(comm, Bytes(header, sizeof(header)), root);
  if (!is_root) {
    const std::string who = fmt::format("broadcast_frame from root rank {}", root);
    data.assign(transport::decode_frame_header(header, comm.options().frame_limit, who.c_str()),
                std::byte{0});
  }
  broadcast(comm, data, root);
  return data;
}

}  // namespace kolo::comm
