// Which ranks can share memory, whatever names the launch gave their hosts. Horovod's unchanged
// synthetic benchmark on a one-GPU machine needs every rank to be local rank 0, so it runs as two
// one-slot "hosts" of one machine (`-H localhost:1,127.0.0.1:1`); kolo keeps the launch's hosts
// for the numbers (local rank, local size, the hierarchy) and, as MPI does for ranks on one node,
// lets those ranks meet in shared memory instead of TCP on loopback.
#pragma once

#include <string>
#include <vector>

#include "base/env.h"

namespace kolo::bootstrap {

// This process's machine: the kernel's boot id with its network and mount namespaces (the mount
// namespace holds /dev/shm; network namespaces tell apart the test clusters' hosts and most
// containers). KOLO_MACHINE_ID replaces it; empty when /proc cannot tell (never shared then).
std::string machine_identity(const EnvLookup& lookup);

// What a rank publishes as its host at the rendezvous: "hostname\tmachine". A tab cannot appear
// in a host name, and a peer of an earlier version, which publishes the name alone, reads as a
// machine nobody shares (and reads ours as a host name of its own, as two hosts).
struct HostRecord {
  std::string hostname;
  std::string machine;  // empty: unknown
};
std::string host_record_text(const HostRecord& record);
HostRecord parse_host_record(const std::string& text);

// Which ranks meet in shared memory: group ids per rank, ranks linked by a host name or a known
// machine (transitively, so that every rank computes the same groups from the same records).
std::vector<int> memory_groups(const std::vector<HostRecord>& records);

}  // namespace kolo::bootstrap
