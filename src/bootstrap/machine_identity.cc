#include "bootstrap/machine_identity.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <numeric>

namespace kolo::bootstrap {

namespace {

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "net:[4026531840]": the namespace's inode, the same for every process in it.
std::string namespace_link(const char* path) {
  std::array<char, 128> target{};
  const ssize_t length = ::readlink(path, target.data(), target.size() - 1);
  return length > 0 ? std::string(target.data(), static_cast<size_t>(length)) : std::string();
}

}  // namespace

std::string machine_identity(const EnvLookup& lookup) {
  if (auto chosen = find_setting(lookup, "MACHINE_ID")) return chosen->value;
  const std::string boot = first_line("/proc/sys/kernel/random/boot_id");
  const std::string net = namespace_link("/proc/self/ns/net");
  const std::string mnt = namespace_link("/proc/self/ns/mnt");
  if (boot.empty() || net.empty() || mnt.empty()) return {};
  return boot + "/" + net + "/" + mnt;
}

std::string host_record_text(const HostRecord& record) {
  return record.machine.empty() ? record.hostname : record.hostname + "\t" + record.machine;
}

HostRecord parse_host_record(const std::string& text) {
  const size_t tab = text.find('\t');
  if (tab == std::string::npos) return {text, {}};
  return {text.substr(0, tab), text.substr(tab + 1)};
}

std::vector<int> memory_groups(const std::vector<HostRecord>& records) {
  std::vector<int> parent(records.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int r) {
    while (parent[static_cast<size_t>(r)] != r) {
      r = parent[static_cast<size_t>(r)] =
          parent[static_cast<size_t>(parent[static_cast<size_t>(r)])];
    }
    return r;
  };
  auto join = [&](int a, int b) {
    a = root(a);
    b = root(b);
    if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
  };
  std::map<std::string, int> by_host;
  std::map<std::string, int> by_machine;
  for (int r = 0; r < static_cast<int>(records.size()); ++r) {
    const HostRecord& record = records[static_cast<size_t>(r)];
    join(r, by_host.try_emplace(record.hostname, r).first->second);
    if (!record.machine.empty()) join(r, by_machine.try_emplace(record.machine, r).first->second);
  }
  std::vector<int> groups(records.size());
  for (int r = 0; r < static_cast<int>(records.size()); ++r)
    groups[static_cast<size_t>(r)] = root(r);
  return groups;
}

}  // namespace kolo::bootstrap
