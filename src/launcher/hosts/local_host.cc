#include "launcher/hosts/local_host.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace kolo::launcher {

namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string short_name(const std::string& name) { return name.substr(0, name.find('.')); }

}  // namespace

std::string machine_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

bool is_local_host(const std::string& host, const std::string& machine) {
  const std::string name = lowercase(host);  // host names are case-insensitive
  if (name == "localhost" || name == "localhost.localdomain" || name == "::1") return true;
  // 127.0.1.1 is Debian's /etc/hosts address for the machine's own name. Other loopback addresses
  // (127.0.0.2, ...) count as hosts of their own, reached over ssh like any other: on one machine
  // they stand for separate hosts (each its own ssh login), which is how the ssh path is tested.
  if (name == "127.0.0.1" || name == "127.0.1.1") return true;
  const std::string self = lowercase(machine);
  if (self.empty()) return false;
  // "node1" matches "node1.cluster.example" and the other way round: the same machine whether the
  // user typed the short or the fully qualified name.
  return name == self || name == short_name(self) || short_name(name) == self;
}

}  // namespace kolo::launcher
