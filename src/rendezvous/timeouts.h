// Shared by the stores: turning a user's timeout into a deadline, the timeout error every store
// throws, and the counter arithmetic behind add().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/errors.h"

namespace kolo::rendezvous {

// Negative timeouts mean "do not wait"; huge ones (Duration::max()) are clamped so that
// now + timeout cannot overflow.
Duration clamp_timeout(Duration timeout);
inline Deadline deadline_after(Duration timeout) { return Deadline(clamp_timeout(timeout)); }

// "timed out after 2.5 s waiting for key(s) 'a', 'b' (where)".
TimeoutError timeout_waiting_for(const std::vector<std::string>& keys, Duration timeout,
                                 const std::string& where);

// add() on a stored value: an absent (empty) value counts as 0. Stores the new value as decimal
// text and returns it; throws InvalidArgument naming the key if the value is not an integer or
// the sum overflows.
int64_t add_to_counter(const std::string& key, std::string& stored, int64_t delta);

}  // namespace kolo::rendezvous
