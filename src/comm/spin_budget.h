// How long a wait for the host's other ranks spins before it sleeps, learned from the waits
// before it.
//
// Spinning pays when the peer comes within the spin: a futex sleep and wake-up cost more than a
// few microseconds of pause instructions. It wastes a core when the peer is busy elsewhere: in
// training, every core runs some rank's framework thread, and the peer's background thread
// reaches the next collective only once the scheduler gives it a turn, tens of microseconds or
// more later. Then every wait burns its whole spin and sleeps anyway: a third of the background
// thread's CPU in a transformer's step, CPU the compute needs (docs/PERFORMANCE.md, session 23).
// So the spin halves after each wait that outlasted the longest spin and doubles after each that
// ended within it, between 1/16 of the longest and the longest (spin_before_poll), as adaptive
// mutexes do (glibc's PTHREAD_MUTEX_ADAPTIVE_NP). A latency-bound loop of small collectives,
// whose peers answer within microseconds, keeps the whole spin.
#pragma once

#include <algorithm>
#include <chrono>

namespace kolo::comm {

class SpinBudget {
 public:
  static constexpr unsigned kMaxHalvings = 4;

  // The spin the next wait may use, given the longest allowed.
  [[nodiscard]] std::chrono::nanoseconds current(std::chrono::nanoseconds longest) const {
    return longest / (1 << halvings_);
  }

  // A wait that found its peer behind took `waited` in all (spin and sleep).
  void record(std::chrono::nanoseconds waited, std::chrono::nanoseconds longest) {
    if (waited > longest) {
      halvings_ = std::min(halvings_ + 1, kMaxHalvings);
    } else if (halvings_ > 0) {
      --halvings_;
    }
  }

  [[nodiscard]] unsigned halvings() const { return halvings_; }

 private:
  unsigned halvings_ = 0;
};

}  // namespace kolo::comm
