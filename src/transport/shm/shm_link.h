// A Link to a peer on the same host: bytes move through a shared-memory segment (two SPSC rings);
// the socket the pair already shares (TCP after authentication, or a socket pair in tests) stays
// open as doorbell and lifeline: a sleeping side is woken by one byte on it, and when the peer
// dies the kernel closes it, so poll(2) reports the hang-up at once, as for a TCP link.
#pragma once

#include <memory>

#include "transport/link.h"
#include "transport/shm/segment.h"

namespace kolo::transport::shm {

// `socket_link` is the existing link to the same peer (taken over: no bytes may travel on it
// any more); `creator` says whether this side created the segment (the lower rank).
std::unique_ptr<Link> make_shm_link(Segment segment, bool creator,
                                    std::unique_ptr<Link> socket_link);

}  // namespace kolo::transport::shm
