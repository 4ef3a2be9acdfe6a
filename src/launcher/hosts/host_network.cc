#include "launcher/hosts/host_network.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netdb.h>
#include <netinet/in.h>

#include "base/errors.h"
#include "transport/tcp/interfaces.h"

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

// The first --network-interfaces name that is up with an IPv4 address (transport/ lists them, as
// the ranks do when they publish theirs).
std::string interface_address(const std::vector<std::string>& interfaces) {
  const auto available = transport::up_ipv4_interfaces();
  for (const auto& wanted : interfaces) {
    for (const auto& entry : available) {
      if (entry.name == wanted) return entry.address;
    }
  }
  throw InvalidArgument(
      fmt::format("none of the --network-interfaces ({}) has an IPv4 address "
                  "on this machine",
                  fmt::join(interfaces, ", ")));
}

std::string route_source_toward(const std::string& host) {
  const std::string target = ipv4_text(resolve_ipv4(host));
  std::string source = transport::address_toward(target);
  if (source.empty()) {
    throw Error(fmt::format("no route from this machine toward host '{}' ({})", host, target));
  }
  return source;
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
    throw InvalidArgument(
        fmt::format("{}: check the host names given to kolorun", fmt::join(problems, "; ")));
  }
}

std::string rendezvous_bind_address(const std::vector<std::string>& remote_hosts,
                                    const std::vector<std::string>& network_interfaces) {
  if (remote_hosts.empty()) return "127.0.0.1";
  if (!network_interfaces.empty()) return interface_address(network_interfaces);
  return route_source_toward(remote_hosts.front());
}

}  // namespace kolo::launcher
