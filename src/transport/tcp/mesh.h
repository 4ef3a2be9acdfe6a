// A full mesh of authenticated TCP links among `size` ranks. The caller (core's bootstrap) has
// already opened a listener on every rank and exchanged the endpoints through the rendezvous
// store; this file only connects: rank i connects to every j < i and accepts from every j > i.
// Each rank publishes several candidate addresses (interfaces.h), best first: the connecting side
// tries them in order, each bounded by `attempt_timeout`, and the first that completes the
// handshake wins, so an unroutable interface (docker0, virbr0) costs seconds, never a hang.
// After the HMAC handshake the connecting side sends a hello (its rank, the job round, the rank it
// means to reach) so the acceptor knows who it is, and an address that leads to another rank of
// the job (the same private address on two hosts) is refused rather than taken. A connection that fails authentication is logged and dropped, and the
// acceptor keeps waiting for the real peer. The acceptor answers each hello with one status byte,
// so a connecting rank from the wrong round or job learns at once why it was refused.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/logger.h"
#include "transport/link.h"
#include "transport/tcp/auth.h"
#include "transport/tcp/socket.h"

namespace kolo::transport {

struct MeshOptions {
  int rank = 0;
  int size = 1;
  uint64_t round = 0;              // init generation; a hello from another round is refused
  // endpoints[r] = the addresses where rank r may be reached, best first (at least one).
  std::vector<std::vector<Endpoint>> endpoints;
  std::vector<std::string> hosts;  // optional: hosts[r] names rank r's host in messages
  Deadline deadline = Deadline::never();
  // Longest one incoming handshake may take: a connection that stalls (a port scanner, a hung
  // impostor) delays the real peers queued behind it at most this long.
  Duration handshake_timeout = std::chrono::seconds(5);
  // Longest one outgoing attempt (connect, handshake, hello) at one candidate address may take
  // before the next candidate is tried.
  Duration attempt_timeout = std::chrono::seconds(3);
};

// Returns links indexed by rank; links[rank] is null. Throws TimeoutError naming the ranks that
// never connected and, for each rank it could not reach, its host and every address tried with
// why. The address each peer was reached on is logged at debug level.
std::vector<std::unique_ptr<Link>> connect_mesh(const MeshOptions& options, const Socket& listener,
                                                const Secret& secret, const Logger& logger);

}  // namespace kolo::transport
