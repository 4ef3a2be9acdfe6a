#include "bootstrap/world.h"

#include "base/errors.h"

namespace kolo::bootstrap {

WorldInfo WorldInfo::from_hostnames(int rank, std::vector<std::string> hostnames) {
  const int size = static_cast<int>(hostnames.size());
  if (rank < 0 || rank >= size) {
    throw InvalidArgument("rank " + std::to_string(rank) + " outside world of " +
                          std::to_string(size));
  }
  WorldInfo world;
  world.rank = rank;
  world.size = size;
  // Hosts are numbered in order of their first rank.
  std::vector<std::string> hosts;
  world.topology.host_of_rank.resize(size);
  std::vector<int> local_rank_of(size);
  std::vector<int> ranks_seen_on_host;
  for (int r = 0; r < size; ++r) {
    int host = 0;
    while (host < static_cast<int>(hosts.size()) && hosts[host] != hostnames[r]) ++host;
    if (host == static_cast<int>(hosts.size())) {
      hosts.push_back(hostnames[r]);
      ranks_seen_on_host.push_back(0);
    }
    world.topology.host_of_rank[r] = host;
    local_rank_of[r] = ranks_seen_on_host[host]++;
  }
  const int my_host = world.topology.host_of_rank[rank];
  world.local_rank = local_rank_of[rank];
  world.local_size = ranks_seen_on_host[my_host];
  world.cross_rank = 0;
  world.cross_size = 0;
  for (int r = 0; r < size; ++r) {
    if (local_rank_of[r] != world.local_rank) continue;
    if (r < rank) ++world.cross_rank;
    ++world.cross_size;
  }
  world.hostnames = std::move(hostnames);
  return world;
}

}  // namespace kolo::bootstrap
