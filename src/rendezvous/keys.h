// Store keys shared by the launcher and the ranks.
#pragma once

#include <string_view>

namespace kolo::rendezvous {

// Set by the launcher when the first rank fails: "rank 2 (host a) was killed by signal ...".
inline constexpr std::string_view kFailureKey = "kolo/failure";
// Set by the launcher before it starts the ranks: rank r's host on line r. A rank that never
// joins can then be named with its host by the ranks that wait for it.
inline constexpr std::string_view kPlannedHostsKey = "kolo/launch/hosts";

}  // namespace kolo::rendezvous
