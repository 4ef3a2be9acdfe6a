// Store keys of elastic training, shared by kolorun (which owns membership) and the workers'
// init() (docs/elastic_protocol.md). Round g's keys all live under "kolo/elastic/<g>/".
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace kolo::rendezvous {

// The latest published round number ("3"); written last, after the round's assignments.
inline constexpr std::string_view kElasticRoundKey = "kolo/elastic/round";
// "<stamp> <added|removed|mixed>": bumped when the discovered hosts change.
inline constexpr std::string_view kElasticHostsUpdatedKey = "kolo/elastic/hosts_updated";
// The number of state.commit() calls rank 0 made (for kolorun's messages).
inline constexpr std::string_view kElasticCommitKey = "kolo/elastic/commit";

// "<rank> <size>" for a worker that is a member of round g.
inline std::string elastic_assign_key(int64_t round, std::string_view worker) {
  return fmt::format("kolo/elastic/{}/assign/{}", round, worker);
}
// The round's worker ids in rank order, one per line.
inline std::string elastic_members_key(int64_t round) {
  return fmt::format("kolo/elastic/{}/members", round);
}
// Written by a worker's init() that wants to join round g (its value is the worker's host).
inline std::string elastic_ready_key(int64_t round, std::string_view worker) {
  return fmt::format("kolo/elastic/{}/ready/{}", round, worker);
}
// Counts the ready keys of round g, so kolorun reads one key per poll until someone is ready.
inline std::string elastic_ready_count_key(int64_t round) {
  return fmt::format("kolo/elastic/{}/ready_count", round);
}

// Elastic's per-round kFailureKey: what kolorun knows about a member of round g that was lost
// ("rank 1 (host a) was killed by signal SIGKILL (9)"), for the survivors' error messages.
inline std::string elastic_failure_key(int64_t round) {
  return fmt::format("kolo/elastic/{}/failure", round);
}

}  // namespace kolo::rendezvous
