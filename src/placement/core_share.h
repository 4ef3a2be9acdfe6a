// Which CPUs each local rank of a host gets: the share computation behind kolorun's default
// placement (and the ranks' own, under an mpirun or srun that did not bind them).
//
// The job may use some set of CPUs (the affinity mask the launcher inherited: a container's, a
// Slurm cgroup's, a taskset's). Unbound, the ranks' threads wander over all of them, and two
// ranks' busy threads often land on one core while another idles: the same job ran a small
// allreduce 3 to 10 times slower in some runs than in others (issue 26). So each local rank gets
// its own block of physical cores (hyperthreads of one core stay together, as mpirun's
// --bind-to core does), blocks differing in size by at most one core, in the order of the CPUs'
// numbers; with more ranks than physical cores but not more than CPUs, blocks of CPUs; with more
// ranks than CPUs nobody is bound (as mpirun, which binds nothing when oversubscribed): any fixed
// split would leave some CPU with more ranks than another, and the scheduler can no longer even
// that out.
#pragma once

#include <vector>

namespace kolo::placement {

// One CPU the job may use and the physical core it belongs to (its hyperthread siblings share
// the core number; the numbers only need to tell cores apart).
struct Cpu {
  int id = 0;
  int core = 0;
};

struct Share {
  std::vector<int> cpus;  // sorted; the whole job's CPUs when not bound
  bool bound = false;     // false: more ranks than CPUs, every rank may use all of them
  int threads = 1;        // the rank's default thread count: its physical cores (at least 1)
};

// The share of `local_rank` among `local_size` ranks on the CPUs `allowed` (any order, any
// numbering). Throws InvalidArgument for an empty list or a local rank outside [0, local_size).
Share share_for_local_rank(const std::vector<Cpu>& allowed, int local_rank, int local_size);

}  // namespace kolo::placement
