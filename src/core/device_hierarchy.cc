#include "core/device_hierarchy.h"

#include <algorithm>
#include <vector>

#include "comm/collectives.h"
#include "comm/subgroup.h"

namespace kolo::core {

std::shared_ptr<const DeviceHierarchy> device_hierarchy(comm::Communicator& set,
                                                        std::optional<bool> setting) {
  if (!setting.value_or(false) || !comm::hierarchical_applies(set)) return nullptr;
  const comm::Topology& topology = set.topology();
  const int hosts = topology.num_hosts();
  const std::vector<int> local =
      topology.ranks_on_host(topology.host_of_rank[static_cast<size_t>(set.rank())]);
  auto result = std::make_shared<DeviceHierarchy>();
  result->local_rank =
      static_cast<int>(std::find(local.begin(), local.end(), set.rank()) - local.begin());
  result->local_size = static_cast<int>(local.size());
  for (int h = 0; h < hosts; ++h) {
    result->homogeneous = result->homogeneous &&
                          static_cast<int>(topology.ranks_on_host(h).size()) == result->local_size;
  }
  auto host = std::make_shared<comm::Communicator>(comm::subgroup(set, local));
  result->share_host_id = [host](std::span<std::byte> id) { comm::broadcast(*host, id, 0); };
  // Homogeneous: local rank i of every host carries shard i. Uneven: local rank 0 of every host
  // carries the whole buffer (Horovod's choice), the others nothing.
  if (!result->homogeneous && result->local_rank != 0) return result;
  std::vector<int> peers;
  for (int h = 0; h < hosts; ++h) {
    peers.push_back(topology.ranks_on_host(h)[static_cast<size_t>(result->local_rank)]);
  }
  auto cross = std::make_shared<comm::Communicator>(comm::subgroup(set, peers));
  comm::AllreduceOptions flat;
  flat.hierarchical = comm::Hierarchical::off;
  result->cross_allreduce = [cross, flat](Bytes data, size_t count, DataType type, ReduceOp op,
                                          const kernels::ResultScale& scale) {
    comm::allreduce(*cross, data, count, type, op, flat, scale);
  };
  return result;
}

}  // namespace kolo::core
