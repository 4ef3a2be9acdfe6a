// Ranks of one job must speak the same negotiation protocol: a rank from another kolo build would
// otherwise connect fine and fail at its first collective with a decode error on one rank while
// the others wait. Each rank publishes its version in the store before its host key, and checks
// every peer's once that peer's host key is there, so a mixed job fails at bootstrap on every
// rank, naming both versions.
#pragma once

#include <cstdint>
#include <string>

#include "rendezvous/store.h"

namespace kolo::rendezvous {

// Sets `key` to `version` (decimal). Call before publishing anything a peer waits for.
void publish_version(Store& store, const std::string& key, uint32_t version);

// Reads `peer`'s version at `key` (published before the key the caller already waited for, so it
// is there unless the peer predates this check) and throws ProtocolError naming `rank`, `peer`,
// both versions and `what` ("negotiation protocol") when they differ or the peer published none.
void check_peer_version(Store& store, const std::string& key, int rank, int peer, uint32_t version,
                        const std::string& what);

}  // namespace kolo::rendezvous
