#include "core/timeline.h"

#include <fmt/format.h>

#include <cctype>

namespace kolo::core {

std::string timeline_op_name(negotiation::OpType op) {
  std::string name(negotiation::op_type_name(op));
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

Timeline::Timeline(const std::string& path, bool mark_cycles, bool continuing,
                   std::optional<Clock::time_point> zero)
    : writer_(path, continuing), mark_cycles_(mark_cycles), start_(zero.value_or(Clock::now())) {}

long long Timeline::now_us() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count();
}

Timeline::TensorRow& Timeline::row(const std::string& name) {
  auto [it, inserted] = rows_.try_emplace(name);
  if (inserted) {
    // Rows appear in the order tensors were first seen.
    it->second.pid = static_cast<int>(rows_.size());
    writer_.push(fmt::format(
        R"({{"name":"process_name","ph":"M","ts":0,"pid":{},"tid":0,"args":{{"name":{}}}}})",
        it->second.pid, json_string(name)));
    writer_.push(fmt::format(
        R"({{"name":"process_sort_index","ph":"M","ts":0,"pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
        it->second.pid, it->second.pid));
  }
  return it->second;
}

void Timeline::begin(TensorRow& row, std::string_view event, std::string_view args) {
  writer_.push(fmt::format(R"({{"name":{},"ph":"B","ts":{},"pid":{},"tid":0{}}})",
                           json_string(event), now_us(), row.pid,
                           args.empty() ? "" : fmt::format(R"(,"args":{})", args)));
  row.open.emplace_back(event);
}

void Timeline::end(TensorRow& row) {
  if (row.open.empty()) return;
  writer_.push(fmt::format(R"({{"name":{},"ph":"E","ts":{},"pid":{},"tid":0}})",
                           json_string(row.open.back()), now_us(), row.pid));
  row.open.pop_back();
}

void Timeline::cycle_started() {
  if (!mark_cycles_) return;
  writer_.push(fmt::format(R"({{"name":"CYCLE_START","ph":"i","s":"g","ts":{},"pid":0,"tid":0}})",
                           now_us()));
}

void Timeline::mark(std::string_view name) {
  writer_.push(fmt::format(R"({{"name":{},"ph":"i","s":"g","ts":{},"pid":0,"tid":0}})",
                           json_string(name), now_us()));
}

void Timeline::end_open_phases() {
  for (auto& [name, r] : rows_) {
    while (!r.open.empty()) end(r);
    r.negotiating = false;
    r.queued = false;
  }
}

void Timeline::negotiation_started(const std::string& name, negotiation::OpType op) {
  TensorRow& r = row(name);
  if (r.negotiating) return;
  // A tensor resubmitted while its last op is still open (not possible today) closes it first.
  while (!r.open.empty()) end(r);
  r.negotiating = true;
  begin(r, "NEGOTIATE_" + timeline_op_name(op));
}

void Timeline::rank_ready(const std::string& name, negotiation::OpType op, int rank) {
  negotiation_started(name, op);
  writer_.push(fmt::format(R"({{"name":"{}","ph":"i","s":"p","ts":{},"pid":{},"tid":0}})", rank,
                           now_us(), row(name).pid));
}

void Timeline::agreed(const negotiation::Response& response) {
  for (const std::string& name : response.names) {
    TensorRow& r = row(name);
    if (r.negotiating) end(r);
    r.negotiating = false;
    begin(r, timeline_op_name(response.op),
          response.error.empty() ? ""
                                 : fmt::format(R"({{"error":{}}})", json_string(response.error)));
    begin(r, "QUEUE");
    r.queued = true;
  }
}

void Timeline::group_started(const ObservedGroup& group) {
  for (const std::string& name : group.names) {
    TensorRow& r = row(name);
    if (r.queued) end(r);
    r.queued = false;
  }
  // The group a tensor ran in is told by the backend phase's args (see phase_started).
  group_args_ = fmt::format(R"({{"group":{},"tensors":{},"bytes":{}}})", group.group_id,
                            group.names.size(), group.bytes);
}

void Timeline::phase_started(const std::vector<std::string>& names, std::string_view phase) {
  for (const std::string& name : names) begin(row(name), phase, group_args_);
}

void Timeline::phase_ended(const std::vector<std::string>& names) {
  for (const std::string& name : names) end(row(name));
}

void Timeline::group_finished(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    TensorRow& r = row(name);
    while (!r.open.empty()) end(r);
    r.queued = false;
  }
}

}  // namespace kolo::core
