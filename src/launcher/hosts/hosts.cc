#include "launcher/hosts/hosts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/errors.h"

namespace kolo::launcher {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// A positive slot count, or an error message describing why not (empty when fine).
std::string parse_slots(std::string_view text, int& slots) {
  if (text.empty()) return "missing slot count";
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), slots);
  if (error == std::errc::result_out_of_range) {
    return fmt::format("slot count '{}' is too large", text);
  }
  if (error != std::errc() || end != text.data() + text.size()) {
    return fmt::format("slot count '{}' is not a number", text);
  }
  if (slots < 1) return fmt::format("slot count must be at least 1, got {}", slots);
  return {};
}

void check_unique(const std::vector<HostSlots>& hosts, const std::string& where) {
  std::set<std::string> seen;
  for (const auto& entry : hosts) {
    if (!seen.insert(entry.host).second) {
      throw InvalidArgument(fmt::format(
          "host '{}' is listed twice in {}: give each host once with its total slot count",
          entry.host, where));
    }
  }
}

}  // namespace

bool valid_host_name(std::string_view name) {
  if (name.empty() || name.front() == '-') return false;  // ssh would read "-x" as an option
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
      return false;
    }
  }
  return true;
}

std::vector<HostSlots> parse_hosts(std::string_view text, std::optional<int> default_slots) {
  std::vector<HostSlots> hosts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view entry = trim(text.substr(start, comma - start));
    size_t colon = entry.rfind(':');
    HostSlots host;
    std::string problem;
    if (entry.empty()) {
      problem = "empty entry";
    } else if (colon == std::string_view::npos && default_slots) {
      host = HostSlots{std::string(entry), *default_slots};
      if (!valid_host_name(host.host)) problem = fmt::format("invalid host name '{}'", host.host);
    } else if (colon == std::string_view::npos) {
      problem = "missing ':<slots>' (or give --slots-per-host N for entries without one)";
    } else if (host.host = std::string(entry.substr(0, colon)); !valid_host_name(host.host)) {
      problem = fmt::format("invalid host name '{}'", host.host);
    } else {
      problem = parse_slots(entry.substr(colon + 1), host.slots);
    }
    if (!problem.empty()) {
      throw InvalidArgument(fmt::format(
          "invalid host entry '{}' in host list '{}': {} (expected <hostname>:<slots>, e.g. "
          "worker-0:2,worker-1:2)",
          entry, text, problem));
    }
    hosts.push_back(std::move(host));
    start = comma + 1;
  }
  check_unique(hosts, "the host list");
  return hosts;
}

std::vector<HostSlots> parse_hostfile(std::string_view text, const std::string& source,
                                      std::optional<int> default_slots) {
  std::vector<HostSlots> hosts;
  std::istringstream lines{std::string(text)};
  std::string raw;
  int line_number = 0;
  while (std::getline(lines, raw)) {
    ++line_number;
    std::string_view line = raw;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;

    auto fail = [&](const std::string& problem) {
      return InvalidArgument(fmt::format(
          "{}:{}: {} in '{}' (expected '<hostname> slots=<slots>' or '<hostname>:<slots>')", source,
          line_number, problem, line));
    };
    std::istringstream words{std::string(line)};
    std::string first;
    words >> first;
    HostSlots host;
    std::string problem;
    bool have_slots = false;
    if (size_t colon = first.rfind(':'); colon != std::string::npos) {
      host.host = first.substr(0, colon);
      problem = parse_slots(std::string_view(first).substr(colon + 1), host.slots);
      have_slots = true;
    } else {
      host.host = first;
    }
    if (!valid_host_name(host.host)) throw fail(fmt::format("invalid host name '{}'", host.host));
    if (!problem.empty()) throw fail(problem);
    for (std::string word; words >> word;) {
      size_t equals = word.find('=');
      std::string key = word.substr(0, equals);
      if (equals == std::string::npos || (key != "slots" && key != "max_slots")) {
        throw fail(fmt::format("unexpected '{}'", word));
      }
      // max_slots bounds oversubscription, which kolorun never does: accepted and ignored.
      if (key == "max_slots") continue;
      if (have_slots) throw fail("slots given twice");
      problem = parse_slots(std::string_view(word).substr(equals + 1), host.slots);
      if (!problem.empty()) throw fail(problem);
      have_slots = true;
    }
    if (!have_slots && default_slots) {
      host.slots = *default_slots;
      have_slots = true;
    }
    if (!have_slots) throw fail("missing slot count (or give --slots-per-host N)");
    hosts.push_back(std::move(host));
  }
  if (hosts.empty()) throw InvalidArgument(fmt::format("hostfile {} lists no hosts", source));
  check_unique(hosts, "hostfile " + source);
  return hosts;
}

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream file(path);
  if (!file) throw SystemError("open", errno, what + " " + path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<SlotAssignment> assign_slots(const std::vector<HostSlots>& hosts, int num_proc) {
  if (num_proc < 1) {
    throw InvalidArgument(
        fmt::format("the number of processes (-np) must be at least 1, got {}", num_proc));
  }
  long total = 0;
  for (const auto& host : hosts) total += host.slots;
  if (num_proc > total) {
    throw InvalidArgument(fmt::format(
        "requested more processes ({}) than there are available slots ({})", num_proc, total));
  }

  // First pass: which ranks land on which host, in order.
  std::vector<SlotAssignment> plan;
  plan.reserve(static_cast<size_t>(num_proc));
  for (const auto& host : hosts) {
    for (int local = 0; local < host.slots && static_cast<int>(plan.size()) < num_proc; ++local) {
      SlotAssignment slot;
      slot.host = host.host;
      slot.rank = static_cast<int>(plan.size());
      slot.size = num_proc;
      slot.local_rank = local;
      plan.push_back(std::move(slot));
    }
  }
  // Second pass: sizes. local_size counts ranks per host; the cross group of a rank is every
  // rank with the same local_rank, numbered in host order.
  std::map<std::string, int> per_host;
  std::map<int, int> per_local_rank;
  for (auto& slot : plan) {
    ++per_host[slot.host];
    slot.cross_rank = per_local_rank[slot.local_rank]++;
  }
  for (auto& slot : plan) {
    slot.local_size = per_host[slot.host];
    slot.cross_size = per_local_rank[slot.local_rank];
  }
  return plan;
}

std::vector<std::string> hosts_in_plan(const std::vector<SlotAssignment>& plan) {
  std::vector<std::string> hosts;
  for (const auto& slot : plan) {
    if (hosts.empty() || hosts.back() != slot.host) hosts.push_back(slot.host);
  }
  return hosts;
}

}  // namespace kolo::launcher
