// Store keys shared by the launcher and the ranks.
#pragma once

#include <string_view>

namespace kolo::rendezvous {

// Set by the launcher when the first rank fails: "rank 2 (host a) was killed by signal ...".
inline constexpr std::string_view kFailureKey = "kolo/failure";

}  // namespace kolo::rendezvous
