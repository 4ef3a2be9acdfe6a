#include "comm/link_watch.h"

#include <fmt/format.h>

namespace kolo::comm::detail {

PeerError peer_closed_error(const transport::Link& link) {
  return PeerError(link.peer_rank(), link.peer_description() +
                                         " closed the connection (process exited or was killed)");
}

std::string format_duration(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return fmt::format("{} s", duration.count() / 1000);
  return fmt::format("{} ms", duration.count());
}

}  // namespace kolo::comm::detail
