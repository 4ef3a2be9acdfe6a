// How long the calling thread's waits for peers may spin before they sleep.
//
// A wait that sleeps pays a futex wake-up when the peer arrives: on this project's 2-core VM
// 80-100 us, since the sleeping rank's core goes idle and must be woken (docs/PERFORMANCE.md,
// session 29). Two ranks in a loop of blocking calls then fall into a stable slow mode: each
// wakes late, so the other's next wait outlasts its spin and sleeps too, and every call pays a
// wake-up (per-op medians of ~85 us instead of ~8 in one plain job of ten). A caller driving its
// own blocking operation (core::Session::drive) has nothing else of its rank to run: it may
// spin through a wake-up's latency, so a late peer is met spinning and the loop recovers at the
// next call. The background thread keeps the short, adaptive spin (comm/spin_budget.h): in
// training its spin would take the core from the framework's compute.
// Per thread (a scope on the driving thread's stack), never when the host is oversubscribed.
#pragma once

#include <chrono>

namespace kolo::comm {

class PatientWaits {
 public:
  // How long a patient wait spins before it sleeps: past a wake-up's latency here.
  static constexpr std::chrono::microseconds kSpin{300};

  PatientWaits();
  ~PatientWaits();
  PatientWaits(const PatientWaits&) = delete;
  PatientWaits& operator=(const PatientWaits&) = delete;

  // Whether the calling thread is inside a PatientWaits scope.
  [[nodiscard]] static bool active();

 private:
  bool outer_;  // the state before this scope (scopes nest)
};

}  // namespace kolo::comm
