// The Chrome-trace timeline (HOROVOD_TIMELINE, hvd.start_timeline): rank 0 records, per tensor,
//   NEGOTIATE_<OP>  from the first submission rank 0 sees (its own, or another rank's request
//                   reaching the coordinator) to agreement; each rank's request reaching the
//                   coordinator is an instant event named by the rank (cache hits send none);
//   <OP>            from agreement to completion, containing
//     QUEUE                     agreed, waiting for its turn in the executor;
//     MEMCPY_IN_FUSION_BUFFER   (fused groups) packing into the fusion buffer;
//     KOLO_<OP>                 the backend's collective; args name the group, its size, bytes;
//     MEMCPY_OUT_FUSION_BUFFER  (fused groups) unpacking.
// With mark_cycles, every background cycle is a global CYCLE_START instant event. Elastic
// training marks each round's start as a global instant event ELASTIC_RESET (see mark()).
// Each tensor is one "process" row of the trace (named by the tensor), as in Horovod's timeline.
// All methods but close() are called on the background thread only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "core/execution_observer.h"
#include "core/timeline_writer.h"
#include "negotiation/message.h"

namespace kolo::core {

class Timeline final : public ExecutionObserver {
 public:
  // Throws kolo::Error when the file cannot be created.
  // `continuing`: an elastic round after the first continues the job's file (see
  // TimelineWriter) with times counted from `zero`, the process's first round.
  Timeline(const std::string& path, bool mark_cycles, bool continuing = false,
           std::optional<Clock::time_point> zero = std::nullopt);
  // Completes the file; later events are dropped. Any thread.
  void close() { writer_.close(); }
  [[nodiscard]] const std::string& path() const { return writer_.path(); }

  void cycle_started();
  // A global instant event, e.g. "ELASTIC_RESET round 3, size 4" when an elastic round begins.
  void mark(std::string_view name);
  // Ends every phase still open (the timeline is being stopped).
  void end_open_phases();
  // A tensor's negotiation begins (no-op when it is already negotiating).
  void negotiation_started(const std::string& name, negotiation::OpType op);
  // The coordinator received `rank`'s request for `name`.
  void rank_ready(const std::string& name, negotiation::OpType op, int rank);
  // Every rank agreed: ends NEGOTIATE, opens the op and its QUEUE phase for each name.
  void agreed(const negotiation::Response& response);

  void group_started(const ObservedGroup& group) override;
  void phase_started(const std::vector<std::string>& names, std::string_view phase) override;
  void phase_ended(const std::vector<std::string>& names) override;
  void group_finished(const std::vector<std::string>& names) override;

 private:
  struct TensorRow {
    int pid = 0;
    std::vector<std::string> open;  // B events not yet ended, innermost last
    bool negotiating = false;
    bool queued = false;
  };

  TensorRow& row(const std::string& name);
  void begin(TensorRow& row, std::string_view event, std::string_view args = {});
  void end(TensorRow& row);
  [[nodiscard]] long long now_us() const;

  TimelineWriter writer_;
  bool mark_cycles_;
  Clock::time_point start_;
  std::unordered_map<std::string, TensorRow> rows_;
  std::string group_args_;  // of the group running now
};

// The name an op has in the trace: ALLREDUCE, ALLGATHER, ...
std::string timeline_op_name(negotiation::OpType op);
// `text` as a JSON string literal (quotes included).
std::string json_string(std::string_view text);

}  // namespace kolo::core
