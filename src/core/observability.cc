#include "core/observability.h"

#include <algorithm>

namespace kolo::core {

namespace {
constexpr int kCoordinator = 0;
}  // namespace

Observability::Observability(const Config& config, int rank, negotiation::Controller& controller,
                             Executor& executor, const Logger& logger)
    : rank_(rank), controller_(controller), executor_(executor), logger_(logger) {
  tuning_.autotuning = config.autotune;
  tuning_.current.cycle_time_ms = static_cast<double>(config.cycle_time.count()) / 1000.0;
  tuning_.current.fusion_threshold = config.fusion_threshold;
  tuning_.current.cache_enabled = config.cache_capacity > 0;
  if (!config.timeline_path.empty() && rank_ == kCoordinator) {
    install_timeline(std::make_shared<Timeline>(config.timeline_path, config.timeline_mark_cycles,
                                                config.timeline_continue, config.timeline_zero));
  }
  if (rank_ != kCoordinator) return;
  if (config.stall_check) {
    stall_.emplace(StallSettings{config.stall_warning_time, config.stall_shutdown_time});
  }
  if (config.autotune) {
    AutotuneSettings settings;
    settings.warmup_samples = config.autotune_warmup_samples;
    settings.steps_per_sample = config.autotune_steps_per_sample;
    settings.samples_per_trial = config.autotune_samples_per_trial;
    auto explicitly_set = [&](const std::string& name) {
      return std::any_of(config.sources.begin(), config.sources.end(), [&](const auto& source) {
        return source.first == name && source.second != "default";
      });
    };
    settings.tune_fusion_threshold = !explicitly_set("FUSION_THRESHOLD");
    settings.tune_cycle_time = !explicitly_set("CYCLE_TIME");
    settings.tune_cache = config.cache_capacity > 0 && !explicitly_set("CACHE_CAPACITY");
    tuner_.emplace(settings, tuning_.current, config.autotune_log);
  }
  controller_.set_request_observer([this](const negotiation::Request& request) {
    if (cycle_timeline_) cycle_timeline_->rank_ready(request.name, request.op, request.rank);
  });
}

Observability::~Observability() {
  // The background thread has ended: nothing else holds the timeline.
  if (timeline_) timeline_->close();
}

std::chrono::milliseconds Observability::resend_cached_after(const Config& config) {
  const std::chrono::milliseconds usual{5000};
  if (!config.stall_check) return usual;
  auto earliest = config.stall_warning_time;
  if (config.stall_shutdown_time.count() > 0) {
    earliest = std::min(earliest, config.stall_shutdown_time);
  }
  return std::clamp(earliest / 2, std::chrono::milliseconds(1), usual);
}

void Observability::start_timeline(const std::string& path, bool mark_cycles) {
  if (rank_ != kCoordinator) return;
  install_timeline(std::make_shared<Timeline>(path, mark_cycles));
}

// Rank 0 only: makes `timeline` the one being written and closes the one before.
void Observability::install_timeline(std::shared_ptr<Timeline> timeline) {
  const std::string path = timeline->path();
  std::shared_ptr<Timeline> previous;
  {
    std::lock_guard lock(mutex_);
    previous = std::exchange(timeline_, timeline);
  }
  if (previous) previous->close();
  logger_.info("timeline: writing {}", path);
}

void Observability::stop_timeline(const std::function<void()>& wake_loop) {
  std::shared_ptr<Timeline> previous;
  {
    std::unique_lock lock(mutex_);
    previous = std::exchange(timeline_, nullptr);
    if (!previous) return;
    // The background thread holds its own reference until its next cycle starts; wait for that
    // so the ops it is finishing are complete in the file. A loop that stopped (failed session)
    // never gets there: the timeout lets the file close with those ops left open.
    const uint64_t now = cycles_;
    wake_loop();
    cycle_started_.wait_for(lock, std::chrono::seconds(1), [&] { return cycles_ > now; });
  }
  previous->close();
}

void Observability::mark_timeline(std::string name) {
  std::lock_guard lock(mutex_);
  if (timeline_) marks_.push_back(std::move(name));
}

void Observability::cycle_started(const std::vector<negotiation::Request>& fresh) {
  std::shared_ptr<Timeline> next;
  std::vector<std::string> marks;
  {
    std::lock_guard lock(mutex_);
    next = timeline_;
    marks.swap(marks_);
  }
  // A timeline that was stopped or replaced gets its open phases ended, so it stays balanced.
  if (cycle_timeline_ && cycle_timeline_ != next) cycle_timeline_->end_open_phases();
  {
    std::lock_guard lock(mutex_);
    cycle_timeline_ = std::move(next);
    ++cycles_;
  }
  cycle_started_.notify_all();
  executor_.set_observer(cycle_timeline_.get());
  if (!cycle_timeline_) return;
  cycle_timeline_->cycle_started();
  for (const auto& name : marks) cycle_timeline_->mark(name);
  for (const auto& request : fresh) cycle_timeline_->negotiation_started(request.name, request.op);
}

void Observability::agreed(const negotiation::ResponseList& list,
                           const std::map<std::string, TensorEntry>& pending) {
  if (list.parameters) apply(*list.parameters);
  cycle_bytes_ = 0;
  for (const auto& response : list.responses) {
    if (cycle_timeline_) cycle_timeline_->agreed(response);
    if (!tuner_ || response.op != negotiation::OpType::allreduce || !response.error.empty()) {
      continue;
    }
    for (const auto& name : response.names) {
      if (auto it = pending.find(name); it != pending.end()) cycle_bytes_ += it->second.bytes();
    }
  }
}

void Observability::apply(const negotiation::TunedParameters& parameters) {
  executor_.set_fusion_threshold(parameters.fusion_threshold);
  controller_.set_cache_enabled(parameters.cache_enabled);
  {
    std::lock_guard lock(mutex_);
    tuning_.current = parameters;
    if (parameters.final) tuning_.autotuning = false;
  }
  if (tuner_) tuner_->applied(parameters, Clock::now());
  logger_.debug("autotune: fusion threshold {} bytes, cycle time {} ms, response cache {}",
                parameters.fusion_threshold, parameters.cycle_time_ms,
                parameters.cache_enabled ? "on" : "off");
}

void Observability::cycle_finished() {
  if (tuner_ && !tuner_->done()) {
    if (auto next = tuner_->cycle_finished(cycle_bytes_, Clock::now())) controller_.publish(*next);
    if (tuner_->done()) {
      logger_.info("autotune: done after {} trials", tuner_->trials().size());
    }
  }
  cycle_bytes_ = 0;
  if (stall_ && stall_->due(Clock::now())) inspect_stalls();
}

void Observability::inspect_stalls() {
  StallReport report = stall_->inspect(controller_.coordinator_pending(), Clock::now());
  if (!report.warning.empty()) logger_.warn("{}", report.warning);
  for (const auto& [name, message] : report.cancel) {
    logger_.error("stall shutdown: cancelling tensor '{}' on every rank", name);
    controller_.cancel(name, message);
  }
}

std::chrono::microseconds Observability::cycle_time() const {
  std::lock_guard lock(mutex_);
  return std::chrono::microseconds(static_cast<int64_t>(tuning_.current.cycle_time_ms * 1000.0));
}

TuningState Observability::tuning_state() const {
  std::lock_guard lock(mutex_);
  return tuning_;
}

}  // namespace kolo::core
