// The coordinator's message table (lives on rank 0 of the group): requests for each tensor name
// accumulate across cycles until every rank has submitted that name; then the name becomes one
// Response (or an error Response naming the tensor, the field and the ranks). Pure logic: no
// communication, so every rule is testable with plain RequestLists.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "negotiation/message.h"

namespace kolo::negotiation {

// A name some ranks submitted and others not yet: what the stall inspector reports.
struct PendingTensor {
  std::string name;
  std::vector<int> submitted;  // ascending
  std::vector<int> missing;    // ascending
  Clock::time_point first_seen;
};

class Coordinator {
 public:
  explicit Coordinator(int size);

  // Join (Horovod's hvd.join()): a rank that submitted a join request counts as having submitted
  // every other name too, so an allreduce completes once every rank that has not joined submitted
  // it (joined ranks take part with zeros); allgather, broadcast, alltoall and reducescatter
  // fail while any rank is joined, as soon as a rank submits them. The join name completes once
  // every rank joined; its response carries the last rank that joined in `root`, and the joined
  // state is reset.
  //
  // Adds the requests that `from_rank` sent this cycle. Each request must carry rank ==
  // from_rank (ProtocolError otherwise). A name submitted again by the same rank before it
  // completed makes that name fail (once every rank submitted it) with a "Duplicate request" error.
  void add(const RequestList& list, int from_rank, Clock::time_point now = Clock::now());

  // Responses for every name that completed since the last call, in the order they completed
  // (ranks' lists are added in rank order, so the order is deterministic). Once any rank
  // announced shutdown, every name still pending is also failed (in first-seen order) and the
  // list has shutdown = true; this stays so for later calls.
  [[nodiscard]] ResponseList take_responses();

  // Fails a pending name on every rank with `message` (stall inspector); its error response comes
  // out of the next take_responses(). Unknown names are ignored (completed meanwhile).
  void cancel(const std::string& name, const std::string& message);

  // Names still waiting for some rank, in first-seen order.
  [[nodiscard]] std::vector<PendingTensor> pending() const;
  [[nodiscard]] size_t pending_count() const { return table_.size(); }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] bool any_joined() const { return joined_count_ > 0; }

 private:
  struct Entry {
    std::vector<std::optional<Request>> by_rank;
    std::vector<int> duplicate_ranks;
    int submitted = 0;
    Clock::time_point first_seen;
    uint64_t sequence = 0;  // first-seen order
  };

  // Members of one group whose names completed, waiting for the rest of the group.
  struct HeldGroup {
    int32_t expected = 0;  // group_size as rank 0 submitted it
    std::vector<Response> members;
  };

  void add_request(const Request& request, int from_rank, Clock::time_point now,
                   std::vector<std::string>& completed);
  // Queues a completed name's response, or holds it until its whole group completed.
  void release(Response response, int32_t group_id, int32_t group_size);
  [[nodiscard]] bool ready(const Entry& entry) const;
  [[nodiscard]] bool cannot_run_while_joined(const Entry& entry) const;
  void complete_ready(std::vector<std::string>& completed);
  Response complete(const std::string& name, Entry& entry);
  [[nodiscard]] std::vector<const std::pair<const std::string, Entry>*> in_first_seen_order() const;

  int size_;
  std::unordered_map<std::string, Entry> table_;
  std::vector<Response> ready_;
  std::unordered_map<int32_t, HeldGroup> groups_;
  std::vector<int> shutdown_ranks_;
  std::vector<bool> joined_;  // by rank: submitted a join that has not completed yet
  int joined_count_ = 0;
  int last_joined_ = -1;
  uint64_t next_sequence_ = 0;
};

}  // namespace kolo::negotiation
