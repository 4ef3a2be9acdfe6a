#include "bootstrap/peer_wait.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/errors.h"
#include "rendezvous/keys.h"

namespace kolo::bootstrap {

namespace {

// " on host 'node2'" when the launcher published where rank `peer` was started, else "".
std::string planned_host(rendezvous::Store& store, int peer) {
  try {
    const std::string hosts =
        store.get(std::string(rendezvous::kPlannedHostsKey), Duration::zero());
    size_t begin = 0;
    for (int line = 0; line < peer && begin != std::string::npos; ++line) {
      begin = hosts.find('\n', begin);
      if (begin != std::string::npos) ++begin;
    }
    if (begin == std::string::npos || begin >= hosts.size()) return "";
    return fmt::format(" on host '{}'", hosts.substr(begin, hosts.find('\n', begin) - begin));
  } catch (const Error&) {
    return "";  // not started by kolorun (mpirun, srun): the host is not known
  }
}

}  // namespace

std::string await_peer_key(rendezvous::Store& store, const std::string& name, int peer,
                           Duration timeout, const std::string& server) {
  constexpr Duration kSlice = std::chrono::milliseconds(250);
  const Deadline deadline(timeout);
  for (;;) {
    const Duration left = deadline.at() - Clock::now();
    try {
      return store.get(name, std::max(Duration::zero(), std::min(left, kSlice)));
    } catch (const TimeoutError&) {
    }
    std::string failure;
    try {
      failure = store.get(std::string(rendezvous::kFailureKey), Duration::zero());
    } catch (const TimeoutError&) {
    }
    if (!failure.empty()) {
      throw PeerError(peer, fmt::format("rank {} did not join the job: the launcher reports the "
                                        "first failure: {}",
                                        peer, failure));
    }
    if (deadline.expired()) {
      throw TimeoutError(fmt::format(
          "rank {}{} did not join within {:.3g} s (no '{}' at the rendezvous server {}): it did "
          "not start, or it is stopped or stuck before init()",
          peer, planned_host(store, peer), std::chrono::duration<double>(timeout).count(), name,
          server));
    }
  }
}

}  // namespace kolo::bootstrap
