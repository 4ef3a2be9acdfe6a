// Autotune (HOROVOD_AUTOTUNE): rank 0 measures throughput (bytes allreduced per second) while it
// tries fusion thresholds, cycle times and the response cache on/off, then fixes the best.
//
// Search: coordinate descent over a fixed grid, one parameter at a time, starting from the
// configured values; each parameter's values are tried with the others at the best found so far,
// and a combination measured once is never measured again. A trial's score is the median of
// `samples_per_trial` samples; a sample spans `steps_per_sample` steps (cycles that allreduced
// something) and scores bytes / seconds over that window. The first `warmup_samples` samples are
// discarded. When every value was tried, the best-scoring trial's parameters are fixed.
// (Horovod fits a Gaussian process instead; over a grid this small, exhaustive coordinate descent
// with medians is as good and its outcome is easy to check.)
//
// Only rank 0 runs an Autotuner; the values it returns travel to every rank in a ResponseList,
// and every rank (rank 0 included) applies them in that same cycle, then rank 0 calls applied().
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "negotiation/message.h"

namespace kolo::core {

using negotiation::TunedParameters;

struct AutotuneSettings {
  uint32_t warmup_samples = 3;
  uint32_t steps_per_sample = 10;
  uint32_t samples_per_trial = 3;
  // A parameter the user set explicitly is held constant (as in Horovod), as is the cache
  // when configuration disabled it.
  bool tune_fusion_threshold = true;
  bool tune_cycle_time = true;
  bool tune_cache = true;
  std::vector<uint64_t> fusion_thresholds = {1ull << 20,  4ull << 20,  16ull << 20,
                                             32ull << 20, 64ull << 20, 128ull << 20};
  std::vector<double> cycle_times_ms = {0.5, 1.0, 2.5, 5.0, 10.0, 25.0};
};

struct AutotuneTrial {
  TunedParameters parameters;
  std::vector<double> samples;  // bytes per second
  double score = 0;             // median of samples
};

class Autotuner {
 public:
  // `log_path` empty: no log; otherwise a CSV of every trial and the final choice (throws
  // kolo::Error when it cannot be created).
  Autotuner(AutotuneSettings settings, TunedParameters initial, const std::string& log_path);

  // After every cycle: `bytes` allreduced in it (0: not a step). Returns parameters to publish
  // (the next trial's, or the final choice) when it is time to switch.
  std::optional<TunedParameters> cycle_finished(uint64_t bytes, Clock::time_point now);
  // `parameters` came back in a response list: they are in force from `now` on.
  void applied(const TunedParameters& parameters, Clock::time_point now);

  [[nodiscard]] bool done() const { return done_; }
  [[nodiscard]] const std::vector<AutotuneTrial>& trials() const { return trials_; }
  // The best-scoring trial so far (the initial values before any trial ended).
  [[nodiscard]] TunedParameters best() const;

 private:
  std::optional<TunedParameters> next_candidate();
  void finish_trial();
  void log_line(const std::string& label, const TunedParameters& parameters, double score,
                size_t samples);

  AutotuneSettings settings_;
  TunedParameters initial_;
  std::ofstream log_;
  std::vector<AutotuneTrial> trials_;
  size_t dimension_ = 0;  // 0: fusion threshold, 1: cycle time, 2: cache
  size_t value_ = 0;      // next value of that dimension to try
  AutotuneTrial current_;
  bool waiting_for_apply_ = true;  // the first trial is published by the first cycle
  bool done_ = false;
  uint32_t warmup_left_;
  uint32_t steps_ = 0;
  uint64_t bytes_ = 0;
  Clock::time_point window_start_{};
};

// The median of `values` (not empty).
double median(std::vector<double> values);

}  // namespace kolo::core
