#include "core/failure_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "base/clock.h"
#include "rendezvous/keys.h"

namespace kolo::core {

std::string FailureReport::with_root_cause(const PeerError& error) const {
  std::string message = error.what();
  if (!store_) return message;
  if (error.kind() == PeerError::Kind::silent && error.peer_rank() >= 0) {
    return message + trace_wait_chain(error.peer_rank());
  }
  // A peer that closed its links after timing out itself (a rank frozen in shutdown makes its
  // neighbours give up one by one) published whom it waited on: that chain names the frozen rank,
  // which the launcher cannot know yet (the first rank to exit is only a messenger).
  if (error.peer_rank() >= 0 && published_a_wait(error.peer_rank())) {
    return message + trace_wait_chain(error.peer_rank());
  }
  try {
    const std::string first = store_->get(failure_key_, std::chrono::seconds(2));
    message += "; the launcher reports the first failure: " + first;
  } catch (const Error&) {
    // No launcher report (not started by kolorun, or the peer is alive but silent).
  }
  return message;
}

std::string FailureReport::stuck_key(int rank) const {
  return fmt::format("kolo/round{}/stuck/{}", round_, rank);
}

bool FailureReport::published_a_wait(int rank) const {
  try {
    (void)store_->get(stuck_key(rank), std::chrono::milliseconds(200));
    return true;
  } catch (const Error&) {
    return false;  // it timed out on nobody (or the store is gone): the launcher's report it is
  }
}

std::string FailureReport::rank_on_host(int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= hostnames_.size())
    return fmt::format("rank {}", rank);
  return fmt::format("rank {} on host '{}'", rank, hostnames_[rank]);
}

std::string FailureReport::trace_wait_chain(int awaited) const {
  // Every rank that times out publishes whom it waited on, then follows the chain from its own
  // awaited peer: the first rank that published nothing is the one that stopped responding.
  auto key = [&](int rank) { return stuck_key(rank); };
  std::vector<int> chain = {awaited};
  // The others time out at about the same moment as this rank: one second for the whole chain
  // (not per hop), so a longer chain does not push the error past the peer timeout + 2 s.
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  try {
    store_->set(key(rank_), std::to_string(awaited));
    while (static_cast<int>(chain.size()) <= size_) {
      const auto left =
          std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                   std::chrono::milliseconds(20));
      const int next = std::stoi(store_->get(key(chain.back()), left));
      if (next == rank_ || std::find(chain.begin(), chain.end(), next) != chain.end()) {
        return fmt::format(
            "; ranks {} wait on each other in a cycle (collectives submitted in "
            "different orders?)",
            fmt::join(chain, ", "));
      }
      chain.push_back(next);
    }
  } catch (const TimeoutError&) {
    // chain.back() published nothing: it is the rank that stopped responding.
  } catch (const Error& error) {
    logger_.debug("could not trace the wait chain: {}", error.what());
    return "";
  }
  if (chain.size() == 1) {
    return fmt::format("; {} is alive but not responding (hung, stopped, or overloaded)",
                       rank_on_host(awaited));
  }
  // The rank at the chain's end is the one to look at: its host is named, as the transport
  // names the peer it lost, so the message says which machine whatever the chain's length.
  return fmt::format(
      "; rank {} was itself waiting (chain {}): {} is the one not responding "
      "(hung, stopped, or overloaded)",
      awaited, fmt::join(chain, " -> "), rank_on_host(chain.back()));
}

}  // namespace kolo::core
