#include "core/autotune.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/errors.h"

namespace kolo::core {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Autotuner::Autotuner(AutotuneSettings settings, TunedParameters initial,
                     const std::string& log_path)
    : settings_(std::move(settings)), initial_(initial), warmup_left_(settings_.warmup_samples) {
  if (settings_.steps_per_sample == 0 || settings_.samples_per_trial == 0) {
    throw InvalidArgument("autotune needs at least one step per sample and one sample per trial");
  }
  if (!log_path.empty()) {
    log_.open(log_path, std::ios::out | std::ios::trunc);
    if (!log_) {
      throw Error(
          fmt::format("cannot write the autotune log '{}': {}", log_path, std::strerror(errno)));
    }
    log_ << "trial,fusion_threshold_mb,cycle_time_ms,cache_enabled,score_bytes_per_second,"
            "samples\n"
         << std::flush;
  }
  // With every parameter held constant the only trial is the configured values.
  current_.parameters = next_candidate().value_or(initial_);
}

TunedParameters Autotuner::best() const {
  if (trials_.empty()) return initial_;
  return std::max_element(trials_.begin(), trials_.end(),
                          [](const auto& a, const auto& b) { return a.score < b.score; })
      ->parameters;
}

std::optional<TunedParameters> Autotuner::next_candidate() {
  auto measured = [&](const TunedParameters& p) {
    return std::any_of(trials_.begin(), trials_.end(),
                       [&](const AutotuneTrial& t) { return t.parameters == p; });
  };
  const bool tuned[] = {settings_.tune_fusion_threshold, settings_.tune_cycle_time,
                        settings_.tune_cache};
  while (dimension_ < 3) {
    const size_t values = !tuned[dimension_] ? 0
                          : dimension_ == 0  ? settings_.fusion_thresholds.size()
                          : dimension_ == 1  ? settings_.cycle_times_ms.size()
                                             : 2;
    if (value_ >= values) {
      ++dimension_;
      value_ = 0;
      continue;
    }
    // Each dimension starts from the best combination found so far.
    TunedParameters candidate = best();
    if (dimension_ == 0) candidate.fusion_threshold = settings_.fusion_thresholds[value_];
    if (dimension_ == 1) candidate.cycle_time_ms = settings_.cycle_times_ms[value_];
    if (dimension_ == 2) candidate.cache_enabled = value_ == 0;
    ++value_;
    if (!measured(candidate)) return candidate;
  }
  return std::nullopt;
}

std::optional<TunedParameters> Autotuner::cycle_finished(uint64_t bytes, Clock::time_point now) {
  if (done_) return std::nullopt;
  if (waiting_for_apply_) {
    // Published once; repeated until it comes back, since the first cycle may not exchange yet.
    return current_.parameters;
  }
  if (bytes == 0) return std::nullopt;
  bytes_ += bytes;
  if (++steps_ < settings_.steps_per_sample) return std::nullopt;

  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  const double score = static_cast<double>(bytes_) / std::max(seconds, 1e-9);
  steps_ = 0;
  bytes_ = 0;
  window_start_ = now;
  if (warmup_left_ > 0) {
    --warmup_left_;
    return std::nullopt;
  }
  current_.samples.push_back(score);
  if (current_.samples.size() < settings_.samples_per_trial) return std::nullopt;

  finish_trial();
  if (auto next = next_candidate()) {
    current_ = AutotuneTrial{*next, {}, 0};
  } else {
    done_ = true;
    TunedParameters chosen = best();
    log_line("best", chosen,
             std::max_element(trials_.begin(), trials_.end(),
                              [](const auto& a, const auto& b) { return a.score < b.score; })
                 ->score,
             0);
    chosen.final = true;
    return chosen;
  }
  waiting_for_apply_ = true;
  return current_.parameters;
}

void Autotuner::applied(const TunedParameters& parameters, Clock::time_point now) {
  if (done_ || parameters != current_.parameters) return;
  waiting_for_apply_ = false;
  steps_ = 0;
  bytes_ = 0;
  window_start_ = now;
}

void Autotuner::finish_trial() {
  current_.score = median(current_.samples);
  trials_.push_back(current_);
  log_line(std::to_string(trials_.size()), current_.parameters, current_.score,
           current_.samples.size());
}

void Autotuner::log_line(const std::string& label, const TunedParameters& parameters, double score,
                         size_t samples) {
  if (!log_.is_open()) return;
  log_ << fmt::format("{},{:g},{:g},{},{:.1f},{}\n", label,
                      static_cast<double>(parameters.fusion_threshold) / (1 << 20),
                      parameters.cycle_time_ms, parameters.cache_enabled ? 1 : 0, score, samples)
       << std::flush;
}

}  // namespace kolo::core
