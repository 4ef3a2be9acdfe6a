#include "comm/subgroup.h"

#include <fmt/format.h>

#include <map>
#include <vector>

#include "base/errors.h"

namespace kolo::comm {

Communicator subgroup(Communicator& comm, std::span<const int> ranks) {
  std::vector<Link*> links;
  Topology topology;
  std::map<int, int> host_numbers;  // parent host index -> index in the subgroup
  int my_index = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    if (r == comm.rank()) my_index = static_cast<int>(i);
    links.push_back(r == comm.rank() ? nullptr : &comm.peer(r));
    const int host = comm.topology().host_of_rank.at(static_cast<size_t>(r));
    const auto [it, inserted] = host_numbers.emplace(host, static_cast<int>(host_numbers.size()));
    topology.host_of_rank.push_back(it->second);
  }
  if (my_index < 0) {
    throw InvalidArgument(
        fmt::format("rank {} is not in the subgroup it was asked to join", comm.rank()));
  }
  // The host arena goes along; the subgroup uses it only if it is exactly the host's ranks.
  topology.host_arena = comm.topology().host_arena;
  // The host's load is the parent's: as many ranks run on it whatever this group holds.
  CommunicatorOptions options = comm.options();
  options.host_ranks = comm.host_ranks();
  Communicator group(my_index, std::move(links), std::move(topology), options);
  comm.share_workspace_with(group);
  return group;
}

}  // namespace kolo::comm
