// A full mesh of authenticated TCP links among `size` ranks. The caller (core's bootstrap) has
// already opened a listener on every rank and exchanged the endpoints through the rendezvous
// store; this file only connects: rank i connects to every j < i and accepts from every j > i.
// After the HMAC handshake the connecting side sends a hello (its rank, the job round) so the
// acceptor knows who it is. A connection that fails authentication is logged and dropped, and the
// acceptor keeps waiting for the real peer. The acceptor answers each hello with one status byte,
// so a connecting rank from the wrong round or job learns at once why it was refused.
#pragma once

#include <memory>
#include <vector>

#include "base/clock.h"
#include "base/logger.h"
#include "transport/link.h"
#include "transport/socket.h"
#include "transport/tcp/auth.h"

namespace kolo::transport {

struct MeshOptions {
  int rank = 0;
  int size = 1;
  uint64_t round = 0;              // init generation; a hello from another round is refused
  std::vector<Endpoint> endpoints;  // endpoints[r] = where rank r listens
  Deadline deadline = Deadline::never();
  // Longest one incoming handshake may take: a connection that stalls (a port scanner, a hung
  // impostor) delays the real peers queued behind it at most this long.
  Duration handshake_timeout = std::chrono::seconds(5);
};

// Returns links indexed by rank; links[rank] is null. Throws TimeoutError naming the ranks that
// never connected.
std::vector<std::unique_ptr<Link>> connect_mesh(const MeshOptions& options, const Socket& listener,
                                                const Secret& secret, const Logger& logger);

}  // namespace kolo::transport
