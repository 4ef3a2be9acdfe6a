#include "transport/tcp/interfaces.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "base/errors.h"
#include "transport/tcp/socket.h"

namespace kolo::transport {

namespace {

std::string ipv4_text(const in_addr& address) {
  char text[INET_ADDRSTRLEN] = {};
  if (::inet_ntop(AF_INET, &address, text, sizeof(text)) == nullptr) return "";
  return text;
}

bool is_loopback_address(const std::string& address) { return address.rfind("127.", 0) == 0; }

void add_once(std::vector<std::string>& list, const std::string& item) {
  if (!item.empty() && std::find(list.begin(), list.end(), item) == list.end()) {
    list.push_back(item);
  }
}

std::string describe_available(const std::vector<InterfaceAddress>& available) {
  std::vector<std::string> names;
  for (const auto& entry : available) add_once(names, entry.name + " (" + entry.address + ")");
  if (names.empty()) return "none";
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::vector<InterfaceAddress> up_ipv4_interfaces() {
  ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0) throw SystemError("getifaddrs", errno, "listing network interfaces");
  const std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> list(raw, &::freeifaddrs);
  std::vector<InterfaceAddress> result;
  for (const ifaddrs* entry = list.get(); entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if ((entry->ifa_flags & IFF_UP) == 0) continue;
    const auto* address = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    InterfaceAddress item;
    item.name = entry->ifa_name;
    item.address = ipv4_text(address->sin_addr);
    item.loopback = (entry->ifa_flags & IFF_LOOPBACK) != 0;
    if (!item.address.empty()) result.push_back(std::move(item));
  }
  return result;
}

std::string address_toward(const std::string& server) {
  if (server == "localhost" || is_loopback_address(server)) return "127.0.0.1";
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(9);
  if (::inet_pton(AF_INET, server.c_str(), &target.sin_addr) != 1) return "";
  const Socket probe(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!probe.valid()) return "";
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  if (::connect(probe.fd(), reinterpret_cast<sockaddr*>(&target), sizeof(target)) != 0 ||
      ::getsockname(probe.fd(), reinterpret_cast<sockaddr*>(&local), &length) != 0) {
    return "";
  }
  return ipv4_text(local.sin_addr);
}

std::vector<std::string> candidate_addresses(const std::vector<InterfaceAddress>& available,
                                             const std::vector<std::string>& wanted,
                                             const std::string& route_address) {
  std::vector<std::string> result;
  if (!wanted.empty()) {
    for (const auto& name : wanted) {
      const bool known = std::any_of(available.begin(), available.end(),
                                     [&](const InterfaceAddress& a) { return a.name == name; });
      if (!known) {
        throw InvalidArgument(fmt::format(
            "network interface '{}' (KOLO_IFACE / HOROVOD_GLOO_IFACE / --network-interfaces) is "
            "not an up interface with an IPv4 address on this host; available: {}",
            name, describe_available(available)));
      }
    }
    // The route toward the rendezvous first, when the user allowed its interface.
    for (const auto& entry : available) {
      if (entry.address == route_address &&
          std::find(wanted.begin(), wanted.end(), entry.name) != wanted.end()) {
        add_once(result, entry.address);
      }
    }
    for (const auto& name : wanted) {
      for (const auto& entry : available) {
        if (entry.name == name) add_once(result, entry.address);
      }
    }
    return result;
  }
  add_once(result, route_address);
  const bool single_host = is_loopback_address(route_address);
  for (const auto& entry : available) {
    if (!entry.loopback || single_host) add_once(result, entry.address);
  }
  return result;
}

}  // namespace kolo::transport
