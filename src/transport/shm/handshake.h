// Internal to shm/: blocking transfers over a (non-blocking, still TCP) link for the short
// set-up handshakes (pair segments, host arena): an offer is a status byte plus a name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/clock.h"
#include "transport/link.h"

namespace kolo::transport::shm::detail {

inline constexpr uint8_t kRefused = 0;
inline constexpr uint8_t kAccepted = 1;

void send_all(Link& link, ConstBytes data, const Deadline& deadline);
void recv_all(Link& link, Bytes data, const Deadline& deadline);
void send_byte(Link& link, uint8_t value, const Deadline& deadline);
uint8_t recv_byte(Link& link, const Deadline& deadline);

// An object's name (accepted) or nullopt (refused: the sender could not create it).
void send_offer(Link& link, const std::optional<std::string>& name, const Deadline& deadline);
std::optional<std::string> recv_offer(Link& link, const Deadline& deadline);

}  // namespace kolo::transport::shm::detail
