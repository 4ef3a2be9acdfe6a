#include "launcher/host_network.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "base/errors.h"

namespace kolo::launcher {

namespace {

std::string ipv4_text(const in_addr& address) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &address, text, sizeof(text));
  return text;
}

// The first IPv4 address of `host`, via the resolver.
in_addr resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int error = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); error != 0 || !found) {
    throw InvalidArgument(fmt::format("host '{}' has no IPv4 address: {}", host,
                                      error != 0 ? ::gai_strerror(error) : "none"));
  }
  in_addr address = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr;
  ::freeaddrinfo(found);
  return address;
}

std::string interface_address(const std::vector<std::string>& interfaces) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw SystemError("getifaddrs", errno, "--network-interfaces");
  std::string chosen;
  for (const auto& wanted : interfaces) {
    for (ifaddrs* entry = list; entry != nullptr && chosen.empty(); entry = entry->ifa_next) {
      if (entry->ifa_addr != nullptr && entry->ifa_addr->sa_family == AF_INET &&
          wanted == entry->ifa_name) {
        chosen = ipv4_text(reinterpret_cast<sockaddr_in*>(entry->ifa_addr)->sin_addr);
      }
    }
    if (!chosen.empty()) break;
  }
  ::freeifaddrs(list);
  if (chosen.empty()) {
    throw InvalidArgument(fmt::format("none of the --network-interfaces ({}) has an IPv4 address "
                                      "on this machine",
                                      fmt::join(interfaces, ", ")));
  }
  return chosen;
}

std::string route_source_toward(const std::string& host) {
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(9);
  target.sin_addr = resolve_ipv4(host);
  int probe = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (probe < 0) throw SystemError("socket", errno, "finding the route toward " + host);
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  const bool found = ::connect(probe, reinterpret_cast<sockaddr*>(&target), sizeof(target)) == 0 &&
                     ::getsockname(probe, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  const int error = errno;
  ::close(probe);
  if (!found) {
    throw SystemError("connect", error,
                      fmt::format("no route from this machine toward host '{}' ({})", host,
                                  ipv4_text(target.sin_addr)));
  }
  return ipv4_text(local.sin_addr);
}

}  // namespace

std::string resolve_with_getaddrinfo(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (found != nullptr) ::freeaddrinfo(found);
  return error == 0 ? std::string() : std::string(::gai_strerror(error));
}

void check_hosts_resolve(const std::vector<std::string>& hosts, const HostResolver& resolve) {
  std::vector<std::string> problems;
  for (const auto& host : hosts) {
    if (std::string why = resolve(host); !why.empty()) {
      problems.push_back(fmt::format("unknown host '{}' ({})", host, why));
    }
  }
  if (!problems.empty()) {
    throw InvalidArgument(fmt::format("{}: check the host names given to kolorun",
                                      fmt::join(problems, "; ")));
  }
}

std::string rendezvous_bind_address(const std::vector<std::string>& remote_hosts,
                                    const std::vector<std::string>& network_interfaces) {
  if (remote_hosts.empty()) return "127.0.0.1";
  if (!network_interfaces.empty()) return interface_address(network_interfaces);
  return route_source_toward(remote_hosts.front());
}

}  // namespace kolo::launcher
