// What the executor reports while it runs a cycle's responses, for whoever watches (the timeline).
// The executor holds a possibly-null pointer and calls these on the background thread only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kolo::core {

// The tensors of one backend call (a fused group, or one tensor).
struct ObservedGroup {
  const std::vector<std::string>& names;
  uint64_t group_id = 0;  // counts groups executed by this executor
  uint64_t bytes = 0;     // payload the group moves (the fusion buffer size when fused)
};

class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  // The group leaves the queue (also for a response that fails every tensor with an error).
  virtual void group_started(const ObservedGroup& group) = 0;
  // A phase inside the group: MEMCPY_IN_FUSION_BUFFER, the backend's collective, ...
  virtual void phase_started(const std::vector<std::string>& names, std::string_view phase) = 0;
  virtual void phase_ended(const std::vector<std::string>& names) = 0;
  virtual void group_finished(const std::vector<std::string>& names) = 0;
};

// Brackets one phase; does nothing without an observer.
class ObservedPhase {
 public:
  ObservedPhase(ExecutionObserver* observer, const std::vector<std::string>& names,
                std::string_view phase)
      : observer_(observer), names_(names) {
    if (observer_ != nullptr) observer_->phase_started(names_, phase);
  }
  ~ObservedPhase() {
    if (observer_ != nullptr) observer_->phase_ended(names_);
  }
  ObservedPhase(const ObservedPhase&) = delete;
  ObservedPhase& operator=(const ObservedPhase&) = delete;

 private:
  ExecutionObserver* observer_;
  const std::vector<std::string>& names_;
};

}  // namespace kolo::core
