#include "launcher/hosts/volcano.h"

#include <fmt/format.h>

#include <set>
#include <sstream>

#include "base/errors.h"
#include "launcher/hosts/local_host.h"

namespace kolo::launcher {

std::vector<HostSlots> parse_volcano_worker_hosts(std::string_view text, const std::string& source,
                                                  int slots_per_host,
                                                  const std::string& machine_hostname) {
  std::vector<HostSlots> hosts{{"localhost", slots_per_host}};
  std::set<std::string> seen;
  std::istringstream lines{std::string(text)};
  std::string line;
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;
    if (!valid_host_name(name)) {
      throw InvalidArgument(fmt::format("{}:{}: invalid host name '{}' in the Volcano worker list",
                                        source, line_number, name));
    }
    if (!seen.insert(name).second) {
      throw InvalidArgument(
          fmt::format("{}:{}: worker '{}' is listed twice", source, line_number, name));
    }
    if (is_local_host(name, machine_hostname)) continue;  // already there as "localhost"
    hosts.push_back({name, slots_per_host});
  }
  return hosts;
}

}  // namespace kolo::launcher
