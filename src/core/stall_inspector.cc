#include "core/stall_inspector.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kolo::core {

namespace {

// Names listed per missing rank before the rest is summarised, so a log line stays readable.
constexpr size_t kNamesPerRank = 32;

std::string seconds_text(std::chrono::milliseconds time) {
  return fmt::format("{:g}", static_cast<double>(time.count()) / 1000.0);
}

}  // namespace

std::string stall_message(std::chrono::milliseconds waited,
                          const std::map<int, std::vector<std::string>>& missing) {
  std::string message = fmt::format(
      "One or more tensors were submitted to be reduced, gathered or broadcasted by subset of "
      "ranks and are waiting for remainder of ranks for more than {} seconds. This may indicate "
      "that different ranks are trying to submit different tensors or that only subset of ranks "
      "is submitting tensors, which will cause deadlock. \nMissing ranks:",
      seconds_text(waited));
  for (const auto& [rank, names] : missing) {
    const size_t shown = std::min(names.size(), kNamesPerRank);
    message +=
        fmt::format("\n{}: [{}", rank,
                    fmt::join(names.begin(), names.begin() + static_cast<long>(shown), ", "));
    if (shown < names.size()) message += fmt::format(", ... and {} more", names.size() - shown);
    message += "]";
  }
  return message;
}

StallInspector::StallInspector(StallSettings settings) : settings_(settings) {
  auto shortest = settings_.warning_time;
  if (settings_.shutdown_time.count() > 0) shortest = std::min(shortest, settings_.shutdown_time);
  // A tenth of the shortest period keeps warnings and cancellations within 10% of their time.
  inspection_period_ =
      std::clamp<Duration>(shortest / 10, std::chrono::milliseconds(10), std::chrono::seconds(1));
}

StallReport StallInspector::inspect(const std::vector<negotiation::PendingTensor>& pending,
                                    Clock::time_point now) {
  next_inspection_ = now + inspection_period_;
  StallReport report;
  std::map<int, std::vector<std::string>> missing;
  for (const auto& tensor : pending) {
    const Duration waited = now - tensor.first_seen;
    if (waited >= settings_.warning_time) {
      for (int rank : tensor.missing) missing[rank].push_back(tensor.name);
    }
    if (settings_.shutdown_time.count() > 0 && waited >= settings_.shutdown_time) {
      std::map<int, std::vector<std::string>> own;
      for (int rank : tensor.missing) own[rank].push_back(tensor.name);
      report.cancel.emplace_back(
          tensor.name,
          fmt::format("{}\nStall shutdown: tensor '{}' waited more than {} seconds "
                      "(HOROVOD_STALL_SHUTDOWN_TIME_SECONDS) for ranks [{}] and is cancelled",
                      stall_message(settings_.warning_time, own), tensor.name,
                      seconds_text(settings_.shutdown_time), fmt::join(tensor.missing, ", ")));
    }
  }
  if (!missing.empty() && (!warned_ || now - last_warning_ >= settings_.warning_time)) {
    warned_ = true;
    last_warning_ = now;
    report.warning = stall_message(settings_.warning_time, missing);
  }
  return report;
}

}  // namespace kolo::core
