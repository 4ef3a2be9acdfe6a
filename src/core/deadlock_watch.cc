#include "core/deadlock_watch.h"

#include <fmt/format.h>

#include "negotiation/request_checks.h"

namespace kolo::core {

bool DeadlockWatch::observe(bool all_waiting, bool progressed, Clock::time_point now) {
  if (!all_waiting || progressed || timeout_.count() <= 0) {
    since_.reset();
    return false;
  }
  if (!since_) since_ = now;
  if (now - *since_ < timeout_) return false;
  since_.reset();
  return true;
}

std::string deadlock_message(const negotiation::PendingTensor& tensor,
                             std::chrono::milliseconds waited) {
  return fmt::format(
      "Deadlock: tensor '{}' was submitted by {} but not by {}, and for {:g} s every rank has "
      "been blocked waiting for a collective with none completing (the ranks called different "
      "collectives, or the same ones in a different order); it fails instead of waiting forever "
      "(the bound is KOLO_PEER_TIMEOUT)",
      tensor.name, negotiation::describe_ranks(tensor.submitted),
      negotiation::describe_ranks(tensor.missing), static_cast<double>(waited.count()) / 1000.0);
}

}  // namespace kolo::core
