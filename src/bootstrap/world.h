// Who is where: rank numbering and the host layout learned from the rendezvous.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.h"

namespace kolo::bootstrap {

struct WorldInfo {
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // index among the ranks on this host, by rank order
  int local_size = 1;  // ranks on this host
  int cross_rank = 0;  // index among the ranks with the same local_rank (one per host)
  int cross_size = 1;  // ranks with the same local_rank
  std::vector<std::string> hostnames;  // per rank
  comm::Topology topology;

  // Computes everything from each rank's host identity, as Horovod defines the numbers.
  static WorldInfo from_hostnames(int rank, std::vector<std::string> hostnames);
};

}  // namespace kolo::bootstrap
