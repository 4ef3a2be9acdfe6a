// Which local addresses a rank publishes for its peers. A host often has interfaces that other
// hosts cannot reach (docker0, virbr0, a VPN); publishing only one guessed address makes a job hang
// or fail when the guess is wrong. So each rank publishes every candidate, best first, and the
// connecting side (connect_mesh) tries them in order. KOLO_IFACE / HOROVOD_GLOO_IFACE
// (kolorun --network-interfaces) restrict the candidates to named interfaces.
#pragma once

#include <string>
#include <vector>

namespace kolo::transport {

// One IPv4 address of an interface that is up.
struct InterfaceAddress {
  std::string name;     // "eth0"
  std::string address;  // "10.0.0.5"
  bool loopback = false;
};

// Every IPv4 address of every interface that is up (getifaddrs), in the kernel's order. Throws
// SystemError if the interfaces cannot be listed.
std::vector<InterfaceAddress> up_ipv4_interfaces();

// The local address the kernel would use to reach `server` (a numeric IPv4 address): the one peers
// most likely reach us at. Only consults the routing table (a UDP connect sends nothing). Returns
// "127.0.0.1" for a loopback server and "" when there is no route or `server` is not numeric IPv4.
std::string address_toward(const std::string& server);

// The addresses to publish, best first, without repeats:
//  - with `wanted` names: the addresses of exactly those interfaces (the route toward the
//    rendezvous first when it is one of them). A name that is not an up interface with an IPv4
//    address throws InvalidArgument naming it and listing the available ones.
//  - without: `route_address` first, then every non-loopback address; loopback addresses only when
//    the route itself is loopback (a single-host job), since another host cannot use them.
std::vector<std::string> candidate_addresses(const std::vector<InterfaceAddress>& available,
                                             const std::vector<std::string>& wanted,
                                             const std::string& route_address);

}  // namespace kolo::transport
