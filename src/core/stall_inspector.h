// The stall inspector (rank 0): tensors that some ranks submitted and others have not, for longer
// than the warning time, are logged in Horovod's words, naming each missing rank and its tensors,
// at most once per warning time; past the shutdown time (if set) they are cancelled on every rank
// with that message. Pure logic over the coordinator's table, so it is tested without a job.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "negotiation/coordinator.h"

namespace kolo::core {

struct StallSettings {
  std::chrono::milliseconds warning_time{60000};
  std::chrono::milliseconds shutdown_time{0};  // 0: never cancel
};

struct StallReport {
  std::string warning;  // empty: nothing to log now
  // Names to fail on every rank, each with the message its handles report.
  std::vector<std::pair<std::string, std::string>> cancel;
};

class StallInspector {
 public:
  explicit StallInspector(StallSettings settings);

  // Whether an inspection is worth its cost now (a few per warning/shutdown period).
  [[nodiscard]] bool due(Clock::time_point now) const { return now >= next_inspection_; }
  StallReport inspect(const std::vector<negotiation::PendingTensor>& pending,
                      Clock::time_point now);

 private:
  StallSettings settings_;
  Duration inspection_period_;
  Clock::time_point next_inspection_{};
  bool warned_ = false;
  Clock::time_point last_warning_{};
};

// Horovod's stall message for `missing` (rank -> names it has not submitted).
std::string stall_message(std::chrono::milliseconds waited,
                          const std::map<int, std::vector<std::string>>& missing);

}  // namespace kolo::core
