// Bootstrap's wait for what a peer publishes when it joins (its host, its addresses), told apart
// from a peer that will never come: between short slices the wait looks for the launcher's report
// of a failed rank, so a rank that dies before joining fails the others at once, naming it, its
// host and how it ended, instead of at the start timeout.
#pragma once

#include <string>

#include "base/clock.h"
#include "rendezvous/store.h"

namespace kolo::bootstrap {

// The value of `key`, which rank `peer` publishes. Throws PeerError (naming the rank and the
// launcher's report) as soon as the launcher reports a failed rank, TimeoutError after `timeout`
// naming the rank, its host when the launcher published the plan, the key and `server`.
std::string await_peer_key(rendezvous::Store& store, const std::string& key, int peer,
                           Duration timeout, const std::string& server);

}  // namespace kolo::bootstrap
