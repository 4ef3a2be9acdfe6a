#include "core/autotune.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "base/errors.h"

namespace kolo::core {
namespace {

using std::chrono::milliseconds;

AutotuneSettings small_grid() {
  AutotuneSettings settings;
  settings.warmup_samples = 1;
  settings.steps_per_sample = 2;
  settings.samples_per_trial = 3;
  settings.fusion_thresholds = {1 << 20, 8 << 20, 64 << 20};
  settings.cycle_times_ms = {1.0, 5.0};
  return settings;
}

// Drives a tuner like the session does: each published value is applied at once, every cycle
// moves `bytes` and takes a duration that `cost` gives for the parameters in force.
struct Simulation {
  Simulation(Autotuner& t, std::function<double(const TunedParameters&)> cost,
             TunedParameters initial)
      : tuner(t), cost_ms(std::move(cost)), in_force(initial) {}
  Autotuner& tuner;
  std::function<double(const TunedParameters&)> cost_ms;
  TunedParameters in_force;
  Clock::time_point now{};
  std::vector<TunedParameters> published;

  void run(int max_cycles) {
    for (int i = 0; i < max_cycles && !tuner.done(); ++i) {
      now += std::chrono::microseconds(static_cast<int64_t>(cost_ms(in_force) * 1000));
      if (auto next = tuner.cycle_finished(1 << 20, now)) {
        published.push_back(*next);
        in_force = *next;
        tuner.applied(*next, now);
      }
    }
  }
};

TEST(Median, OddAndEvenCounts) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 2, 3}), 2.5);
}

TEST(Autotuner, CoordinateDescentFindsTheFastestCombinationAndStops) {
  TunedParameters initial{1.0, 64 << 20, true, false};
  Autotuner tuner(small_grid(), initial, "");
  // Fastest: 8 MB fusion, 5 ms cycle, cache on; each parameter matters independently.
  Simulation sim(
      tuner,
      [](const TunedParameters& p) {
        double ms = 10;
        if (p.fusion_threshold != (8u << 20)) ms += 4;
        if (p.cycle_time_ms != 5.0) ms += 2;
        if (!p.cache_enabled) ms += 1;
        return ms;
      },
      initial);
  sim.run(10000);
  ASSERT_TRUE(tuner.done());
  const TunedParameters best = tuner.best();
  EXPECT_EQ(best.fusion_threshold, 8u << 20);
  EXPECT_EQ(best.cycle_time_ms, 5.0);
  EXPECT_TRUE(best.cache_enabled);
  // The last value published is the final choice, and it is one of the trials.
  ASSERT_FALSE(sim.published.empty());
  EXPECT_TRUE(sim.published.back().final);
  TunedParameters chosen = sim.published.back();
  chosen.final = false;
  EXPECT_EQ(chosen, best);
  // 3 fusion values, then 1 new cycle time, then 1 new cache value: no combination twice.
  EXPECT_EQ(tuner.trials().size(), 5u);
  std::set<std::tuple<uint64_t, double, bool>> distinct;
  for (const auto& trial : tuner.trials()) {
    EXPECT_EQ(trial.samples.size(), 3u);
    distinct.insert({trial.parameters.fusion_threshold, trial.parameters.cycle_time_ms,
                     trial.parameters.cache_enabled});
  }
  EXPECT_EQ(distinct.size(), tuner.trials().size());
  // After it is done it publishes nothing more.
  EXPECT_FALSE(tuner.cycle_finished(1 << 20, sim.now + milliseconds(1)));
}

TEST(Autotuner, CyclesWithoutBytesAreNotStepsAndUnappliedValuesAreRepublished) {
  Autotuner tuner(small_grid(), TunedParameters{}, "");
  auto first = tuner.cycle_finished(0, Clock::time_point{});
  ASSERT_TRUE(first);
  // Not applied yet (no exchange happened): asked again.
  EXPECT_EQ(tuner.cycle_finished(100, Clock::time_point{}), first);
  tuner.applied(*first, Clock::time_point{});
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(tuner.cycle_finished(0, Clock::time_point{}));
  EXPECT_TRUE(tuner.trials().empty());
}

TEST(Autotuner, WithoutTheCacheOnlyTwoParametersAreTuned) {
  AutotuneSettings settings = small_grid();
  settings.tune_cache = false;
  TunedParameters initial{1.0, 1 << 20, false, false};
  Autotuner tuner(settings, initial, "");
  Simulation sim(
      tuner, [](const TunedParameters&) { return 1.0; }, initial);
  sim.run(10000);
  ASSERT_TRUE(tuner.done());
  EXPECT_EQ(tuner.trials().size(), 4u);  // 3 thresholds + 1 new cycle time
  for (const auto& trial : tuner.trials()) EXPECT_FALSE(trial.parameters.cache_enabled);
}

TEST(Autotuner, ExplicitlySetParametersAreHeldConstant) {
  AutotuneSettings settings = small_grid();
  settings.tune_fusion_threshold = false;
  TunedParameters initial{1.0, 3 << 20, true, false};
  Autotuner tuner(settings, initial, "");
  Simulation sim(
      tuner, [](const TunedParameters& p) { return p.cycle_time_ms; }, initial);
  sim.run(10000);
  ASSERT_TRUE(tuner.done());
  EXPECT_EQ(tuner.trials().size(), 3u);  // cycle 1, cycle 5, cache off
  for (const auto& trial : tuner.trials()) EXPECT_EQ(trial.parameters.fusion_threshold, 3u << 20);
  EXPECT_EQ(tuner.best().cycle_time_ms, 1.0);

  settings.tune_cycle_time = settings.tune_cache = false;
  Autotuner fixed(settings, initial, "");
  Simulation only(
      fixed, [](const TunedParameters&) { return 1.0; }, initial);
  only.run(10000);
  ASSERT_TRUE(fixed.done());
  ASSERT_EQ(fixed.trials().size(), 1u);
  EXPECT_EQ(fixed.trials()[0].parameters, initial);
}

TEST(Autotuner, LogHasEveryTrialAndTheBestLast) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("kolo_autotune_test_" + std::to_string(::getpid()) + ".csv");
  {
    TunedParameters initial{1.0, 64 << 20, true, false};
    Autotuner tuner(small_grid(), initial, path.string());
    Simulation sim(
        tuner, [](const TunedParameters& p) { return p.fusion_threshold == (1u << 20) ? 1 : 3; },
        initial);
    sim.run(10000);
    ASSERT_TRUE(tuner.done());
  }
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::filesystem::remove(path);
  ASSERT_EQ(lines.size(), 1u + 5u + 1u);
  EXPECT_EQ(lines[0],
            "trial,fusion_threshold_mb,cycle_time_ms,cache_enabled,score_bytes_per_second,samples");
  EXPECT_EQ(lines[1].rfind("1,1,1,1,", 0), 0u) << lines[1];
  EXPECT_EQ(lines.back().rfind("best,1,", 0), 0u) << lines.back();
}

TEST(Autotuner, RefusesAnUnwritableLogAndEmptySamples) {
  EXPECT_THROW(Autotuner(small_grid(), {}, "/nonexistent-dir/log.csv"), Error);
  AutotuneSettings settings = small_grid();
  settings.steps_per_sample = 0;
  EXPECT_THROW(Autotuner(settings, {}, ""), InvalidArgument);
}

}  // namespace
}  // namespace kolo::core
