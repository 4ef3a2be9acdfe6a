// Deadlines as values, so every wait in kolo carries its own limit and says what it waited for.
#pragma once

#include <chrono>

namespace kolo {

using Clock = std::chrono::steady_clock;
using Duration = Clock::duration;

class Deadline {
 public:
  explicit Deadline(Duration timeout) : at_(Clock::now() + timeout) {}
  static Deadline never() { return Deadline(Clock::time_point::max()); }

  [[nodiscard]] bool expired() const { return Clock::now() >= at_; }
  [[nodiscard]] Clock::time_point at() const { return at_; }
  // Milliseconds left, clamped to [0, cap_ms]; for poll(2).
  [[nodiscard]] int remaining_ms(int cap_ms = 1 << 30) const {
    if (at_ == Clock::time_point::max()) return cap_ms;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap_ms ? cap_ms : static_cast<int>(left);
  }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

}  // namespace kolo
