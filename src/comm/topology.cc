#include <algorithm>

#include "comm/communicator.h"

namespace kolo::comm {

int Topology::num_hosts() const {
  if (host_of_rank.empty()) return 0;
  return *std::max_element(host_of_rank.begin(), host_of_rank.end()) + 1;
}

std::vector<int> Topology::ranks_on_host(int host) const {
  std::vector<int> ranks;
  for (int r = 0; r < static_cast<int>(host_of_rank.size()); ++r) {
    if (host_of_rank[r] == host) ranks.push_back(r);
  }
  return ranks;
}

Topology Topology::flat(int size, bool one_host) {
  Topology topology;
  topology.host_of_rank.resize(static_cast<size_t>(size), 0);
  if (!one_host) {
    for (int r = 0; r < size; ++r) topology.host_of_rank[r] = r;
  }
  return topology;
}

}  // namespace kolo::comm
