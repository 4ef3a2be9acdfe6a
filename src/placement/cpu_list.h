// CPU lists in the kernel's own text form ("0-3,8,10-11", as in Cpus_allowed_list, taskset -c and
// cpuset.cpus), the form placement settings travel in between kolorun and its ranks.
#pragma once

#include <string>
#include <vector>

namespace kolo::placement {

// "0-2,5" -> {0, 1, 2, 5}, sorted and without repeats. Throws InvalidArgument naming `what` (the
// variable or flag) and the bad item for anything else, and for an empty list.
std::vector<int> parse_cpu_list(const std::string& text, const std::string& what);

// {0, 1, 2, 5} -> "0-2,5": runs of consecutive CPUs as ranges. Expects sorted, distinct CPUs.
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace kolo::placement
