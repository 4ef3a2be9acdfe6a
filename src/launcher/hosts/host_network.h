// The launcher's view of the network before a multi-host job starts: every host name must resolve
// (an unknown host is named before anything is launched), and the rendezvous server must listen
// on an address the remote hosts can reach, which is what the ranks get as KOLO_RENDEZVOUS_ADDR.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kolo::launcher {

// Empty when `host` resolves, else why not (getaddrinfo's words).
using HostResolver = std::function<std::string(const std::string& host)>;
std::string resolve_with_getaddrinfo(const std::string& host);

// Throws InvalidArgument naming every host that does not resolve.
void check_hosts_resolve(const std::vector<std::string>& hosts, const HostResolver& resolve);

// Where the rendezvous server listens. No remote host: 127.0.0.1. With --network-interfaces: the
// first of them that has an IPv4 address (InvalidArgument naming them when none has). Otherwise
// the local address the routing table picks toward the first remote host (a UDP connect: no
// packet is sent).
std::string rendezvous_bind_address(const std::vector<std::string>& remote_hosts,
                                    const std::vector<std::string>& network_interfaces);

}  // namespace kolo::launcher
