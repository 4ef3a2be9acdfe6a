#include "comm/link_watch.h"

namespace kolo::comm::detail {

PeerError peer_closed_error(const transport::Link& link) {
  return PeerError(link.peer_rank(), link.peer_description() +
                                         " closed the connection (process exited or was killed)");
}

}  // namespace kolo::comm::detail
