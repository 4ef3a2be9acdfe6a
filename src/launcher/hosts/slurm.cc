#include "launcher/hosts/slurm.h"

#include <fmt/format.h>

#include <charconv>

#include "base/errors.h"

namespace kolo::launcher {

namespace {

// Splits at commas that are not inside brackets.
std::vector<std::string_view> split_top_level(std::string_view text, std::string_view what) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']' && --depth < 0) break;
    if (text[i] == ',' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0)
    throw InvalidArgument(fmt::format("unbalanced '[' or ']' in {} '{}'", what, text));
  parts.push_back(text.substr(start));
  return parts;
}

std::optional<long> to_number(std::string_view text) {
  long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

InvalidArgument too_many_nodes(std::string_view nodelist) {
  return InvalidArgument(
      fmt::format("Slurm node list '{}' names more than {} nodes", nodelist, kMaxSlurmNodes));
}

// The values of one bracket group's body, "01-03,07", as zero-padded texts.
std::vector<std::string> expand_ranges(std::string_view body, std::string_view nodelist) {
  std::vector<std::string> values;
  for (std::string_view item : split_top_level(body, "Slurm node list")) {
    const size_t dash = item.find('-');
    const std::string_view first = item.substr(0, dash);
    const std::string_view last = dash == std::string_view::npos ? first : item.substr(dash + 1);
    auto low = to_number(first);
    auto high = to_number(last);
    if (!low || !high || *high < *low) {
      throw InvalidArgument(fmt::format("bad range '{}' in Slurm node list '{}'", item, nodelist));
    }
    if (static_cast<size_t>(*high - *low) >= kMaxSlurmNodes - values.size()) {
      throw too_many_nodes(nodelist);
    }
    for (long value = *low; value <= *high; ++value) {
      values.push_back(fmt::format("{:0{}}", value, first.size()));
    }
  }
  return values;
}

void expand_name(std::string_view name, std::string prefix, std::string_view nodelist,
                 std::vector<std::string>& out) {
  const size_t open = name.find('[');
  if (open == std::string_view::npos) {
    // Bracket groups multiply: checked per name, so the product is never built.
    if (out.size() >= kMaxSlurmNodes) throw too_many_nodes(nodelist);
    out.push_back(prefix + std::string(name));
    return;
  }
  const size_t close = name.find(']', open);
  if (close == std::string_view::npos) {
    throw InvalidArgument(fmt::format("unbalanced '[' in Slurm node list '{}'", nodelist));
  }
  prefix += name.substr(0, open);
  for (const auto& value : expand_ranges(name.substr(open + 1, close - open - 1), nodelist)) {
    expand_name(name.substr(close + 1), prefix + value, nodelist, out);
  }
}

}  // namespace

std::vector<std::string> expand_slurm_nodelist(std::string_view nodelist) {
  std::vector<std::string> nodes;
  for (std::string_view name : split_top_level(nodelist, "Slurm node list")) {
    if (name.empty()) {
      throw InvalidArgument(fmt::format("empty name in Slurm node list '{}'", nodelist));
    }
    expand_name(name, "", nodelist, nodes);
  }
  return nodes;
}

std::vector<int> expand_slurm_tasks_per_node(std::string_view text) {
  std::vector<int> counts;
  for (std::string_view item : split_top_level(text, "SLURM_TASKS_PER_NODE")) {
    // "2(x3)": 2 tasks on each of the next 3 nodes.
    std::string_view count_text = item;
    long repeat = 1;
    if (const size_t paren = item.find('('); paren != std::string_view::npos) {
      count_text = item.substr(0, paren);
      std::string_view rest = item.substr(paren);
      auto times = rest.size() > 3 && rest.substr(0, 2) == "(x" && rest.back() == ')'
                       ? to_number(rest.substr(2, rest.size() - 3))
                       : std::nullopt;
      if (!times || *times < 1) {
        throw InvalidArgument(
            fmt::format("bad repeat '{}' in SLURM_TASKS_PER_NODE='{}'", item, text));
      }
      repeat = *times;
    }
    auto count = to_number(count_text);
    if (!count || *count < 1 || *count > 1000000) {
      throw InvalidArgument(
          fmt::format("bad task count '{}' in SLURM_TASKS_PER_NODE='{}'", item, text));
    }
    if (static_cast<size_t>(repeat) > kMaxSlurmNodes - counts.size()) {
      throw InvalidArgument(fmt::format("SLURM_TASKS_PER_NODE='{}' describes more than {} nodes",
                                        text, kMaxSlurmNodes));
    }
    counts.insert(counts.end(), static_cast<size_t>(repeat), static_cast<int>(*count));
  }
  return counts;
}

std::optional<SlurmAllocation> slurm_allocation(const EnvLookup& env,
                                                std::optional<int> slots_per_host) {
  auto get = [&env](const char* name) -> std::optional<std::string> {
    auto value = env(name);
    if (!value || value->empty()) return std::nullopt;
    return value;
  };
  auto nodelist = get("SLURM_JOB_NODELIST");
  if (!nodelist) nodelist = get("SLURM_NODELIST");
  if (!nodelist) return std::nullopt;

  SlurmAllocation allocation;
  const auto names = expand_slurm_nodelist(*nodelist);
  std::vector<int> counts;
  if (slots_per_host) {
    counts.assign(names.size(), *slots_per_host);  // an explicit --slots-per-host wins
  } else if (auto per_node = get("SLURM_TASKS_PER_NODE")) {
    counts = expand_slurm_tasks_per_node(*per_node);
    if (counts.size() != names.size()) {
      throw InvalidArgument(fmt::format(
          "SLURM_TASKS_PER_NODE='{}' describes {} node(s) but SLURM_JOB_NODELIST='{}' has {}",
          *per_node, counts.size(), *nodelist, names.size()));
    }
  } else {
    int uniform = 1;
    if (auto text = get("SLURM_NTASKS_PER_NODE")) {
      auto value = to_number(*text);
      if (!value || *value < 1 || *value > 1000000) {
        throw InvalidArgument(fmt::format("SLURM_NTASKS_PER_NODE='{}' is not a task count", *text));
      }
      uniform = static_cast<int>(*value);
    }
    counts.assign(names.size(), uniform);
  }
  for (size_t i = 0; i < names.size(); ++i) allocation.nodes.push_back({names[i], counts[i]});

  auto ntasks = get("SLURM_NTASKS");
  if (!ntasks) ntasks = get("SLURM_NPROCS");
  if (ntasks) {
    auto value = to_number(*ntasks);
    if (!value || *value < 1 || *value > 100000000) {
      throw InvalidArgument(fmt::format("SLURM_NTASKS='{}' is not a task count", *ntasks));
    }
    allocation.ntasks = static_cast<int>(*value);
  }
  return allocation;
}

}  // namespace kolo::launcher
