#include "placement/cpu_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "base/errors.h"

namespace kolo::placement {

namespace {

// One non-negative number filling the whole of `item`, or -1.
int parse_cpu(std::string_view item) {
  int cpu = -1;
  auto [last, error] = std::from_chars(item.data(), item.data() + item.size(), cpu);
  if (item.empty() || error != std::errc() || last != item.data() + item.size()) return -1;
  return cpu;
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text, const std::string& what) {
  auto refuse = [&](std::string_view item) {
    return InvalidArgument(
        fmt::format("{}='{}': '{}' is not a CPU or a range of CPUs (expected a list such as 0-3,8)",
                    what, text, item));
  };
  std::vector<int> cpus;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view item = std::string_view(text).substr(start, end - start);
    const size_t dash = item.find('-');
    const int first = parse_cpu(item.substr(0, dash));
    const int last = dash == std::string_view::npos ? first : parse_cpu(item.substr(dash + 1));
    if (first < 0 || last < first) throw refuse(item);
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    start = end + 1;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t run_end = i;
    while (run_end + 1 < cpus.size() && cpus[run_end + 1] == cpus[run_end] + 1) ++run_end;
    if (!text.empty()) text += ',';
    text +=
        run_end == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[run_end]);
    i = run_end + 1;
  }
  return text;
}

}  // namespace kolo::placement
