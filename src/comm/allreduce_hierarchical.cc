// Hierarchical allreduce for ranks spread over several hosts, as Horovod's
// HOROVOD_HIERARCHICAL_ALLREDUCE: the expensive cross-host links carry each byte once per host
// instead of once per rank.
//
// Striped (every host runs the same number of ranks L): the ranks of a host reduce-scatter the
// buffer into L slices (ring over shared memory), local rank i then allreduces slice i with the
// local rank i of every other host, and the host allgathers the slices back. Every cross-host
// link is busy at once and no leader does all the work.
// Uneven hosts: allreduce inside each host, allreduce among one leader per host (the lowest
// rank), broadcast inside each host.
// The result's scale (Average's division) is applied in the cross-host stage, which computes
// the totals. Each element's final value is computed on one rank per host from the same partial
// results in the same order, so every rank ends with identical bits.
#include <algorithm>
#include <vector>

#include "comm/collective_checks.h"
#include "comm/collectives.h"
#include "comm/subgroup.h"

namespace kolo::comm {

namespace {

// Flat algorithm choice for the subgroups (never hierarchical again).
AllreduceOptions flat(const AllreduceOptions& options) {
  AllreduceOptions result = options;
  result.algorithm = AllreduceAlgorithm::automatic;
  result.hierarchical = Hierarchical::off;
  return result;
}

}  // namespace

bool hierarchical_applies(const Communicator& comm) {
  const Topology& topology = comm.topology();
  const int hosts = topology.num_hosts();
  return hosts > 1 && hosts < comm.size();
}

void allreduce_hierarchical(Communicator& comm, Bytes data, size_t count, DataType type,
                            ReduceOp op, const AllreduceOptions& options,
                            const kernels::ResultScale& scale) {
  const size_t bytes =
      detail::checked_bytes(comm, "allreduce_hierarchical", data.size(), count, type);
  scale.check(type);  // the cross-host stage, which applies it, is not every rank's
  const Topology& topology = comm.topology();
  const int hosts = topology.num_hosts();
  const int my_host = topology.host_of_rank[static_cast<size_t>(comm.rank())];
  const std::vector<int> local = topology.ranks_on_host(my_host);
  const int local_rank =
      static_cast<int>(std::find(local.begin(), local.end(), comm.rank()) - local.begin());
  const auto local_size = static_cast<int>(local.size());
  bool even = true;
  for (int h = 0; h < hosts; ++h) {
    even = even && static_cast<int>(topology.ranks_on_host(h).size()) == local_size;
  }
  Communicator host = subgroup(comm, local);
  const AllreduceOptions sub = flat(options);
  const size_t element = dtype_size(type);

  if (even && count >= static_cast<size_t>(local_size)) {
    std::vector<size_t> counts(static_cast<size_t>(local_size));
    for (int i = 0; i < local_size; ++i) {
      const auto c = static_cast<size_t>(i);
      counts[c] = count / counts.size() + (c < count % counts.size() ? 1 : 0);
    }
    size_t first = 0;
    for (int i = 0; i < local_rank; ++i) first += counts[static_cast<size_t>(i)];
    const Bytes slice =
        data.subspan(first * element, counts[static_cast<size_t>(local_rank)] * element);
    reducescatter(host, data, counts, type, op, slice);  // leaves my slice in place
    std::vector<int> peers;  // local rank i of every host, in host order
    for (int h = 0; h < hosts; ++h)
      peers.push_back(topology.ranks_on_host(h)[static_cast<size_t>(local_rank)]);
    Communicator cross = subgroup(comm, peers);
    allreduce(cross, slice, slice.size() / element, type, op, sub, scale);
    std::vector<size_t> slice_bytes(counts.size());
    for (size_t i = 0; i < counts.size(); ++i) slice_bytes[i] = counts[i] * element;
    allgatherv(host, slice, data.first(bytes), slice_bytes);
    return;
  }
  allreduce(host, data, count, type, op, sub);
  if (local_rank == 0) {
    std::vector<int> leaders;
    for (int h = 0; h < hosts; ++h) leaders.push_back(topology.ranks_on_host(h).front());
    Communicator cross = subgroup(comm, leaders);
    allreduce(cross, data, count, type, op, sub, scale);
  }
  broadcast(host, data.first(bytes), 0);
}

}  // namespace kolo::comm
