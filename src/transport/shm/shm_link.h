// A Link to a peer on the same host: bytes move through a shared-memory segment (two SPSC rings);
// the socket the pair already shares (TCP after authentication, or a socket pair in tests) stays
// open as doorbell and lifeline: a sleeping side is woken by one byte on it, and when the peer
// dies the kernel closes it, so poll(2) reports the hang-up at once, as for a TCP link.
#pragma once

#include <memory>

#include "transport/link.h"
#include "transport/shm/segment.h"

namespace kolo::transport::shm {

// How the fast box's publication is ordered against a sleeping reader (transport/wait_fence.h):
// the asymmetric wait fence where the kernel offers it, or full barriers on both sides (the
// fallback; tests force it to check that path on any kernel).
enum class ShmFences { wait_fence_if_available, full_barriers };

// `socket_link` is the existing link to the same peer (taken over: no bytes may travel on it
// any more); `creator` says whether this side created the segment (the lower rank).
std::unique_ptr<Link> make_shm_link(Segment segment, bool creator,
                                    std::unique_ptr<Link> socket_link,
                                    ShmFences fences = ShmFences::wait_fence_if_available);

}  // namespace kolo::transport::shm
