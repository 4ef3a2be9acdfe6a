#include "rendezvous/timeouts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <chrono>

namespace kolo::rendezvous {

Duration clamp_timeout(Duration timeout) {
  // A year is "forever" for a rendezvous and far from overflowing steady_clock.
  constexpr Duration kLongest = std::chrono::hours(24 * 365);
  if (timeout < Duration::zero()) return Duration::zero();
  return timeout > kLongest ? kLongest : timeout;
}

TimeoutError timeout_waiting_for(const std::vector<std::string>& keys, Duration timeout,
                                 const std::string& where) {
  const double seconds = std::chrono::duration<double>(clamp_timeout(timeout)).count();
  std::vector<std::string> quoted;
  quoted.reserve(keys.size());
  for (const auto& key : keys) quoted.push_back("'" + key + "'");
  return TimeoutError(fmt::format("rendezvous: timed out after {:.3g} s waiting for key{} {} ({})",
                                  seconds, keys.size() == 1 ? "" : "s", fmt::join(quoted, ", "),
                                  where));
}

int64_t add_to_counter(const std::string& key, std::string& stored, int64_t delta) {
  int64_t current = 0;
  if (!stored.empty()) {
    const char* first = stored.data();
    const char* last = first + stored.size();
    auto [end, error] = std::from_chars(first, last, current);
    if (error != std::errc() || end != last) {
      throw InvalidArgument("rendezvous: add on key '" + key + "' whose value is not an integer (" +
                            std::to_string(stored.size()) + " bytes)");
    }
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(current, delta, &sum)) {
    throw InvalidArgument(
        fmt::format("rendezvous: add {} to key '{}' (value {}) overflows", delta, key, current));
  }
  stored = std::to_string(sum);
  return sum;
}

}  // namespace kolo::rendezvous
