// Launch information the launcher (kolorun, horovodrun, mpirun, srun) hands each rank through
// the environment: who this rank is and where the job's rendezvous store listens.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/env.h"

namespace kolo::bootstrap {

struct LaunchInfo {
  int rank = 0;
  int size = 1;
  std::string hostname;         // empty: this machine's hostname
  std::string machine;          // machine_identity(): who may share memory (empty: by name)
  std::string rendezvous_addr;  // empty: single process, no rendezvous
  uint16_t rendezvous_port = 0;
  std::string secret_hex;
  // Started by mpirun/srun rather than kolorun: the launcher's variables gave rank and size, and
  // the rendezvous address and secret must come over MPI (mpi_bootstrap.h) before connect_world().
  bool rendezvous_over_mpi = false;
  std::string mpi_size_variable;  // e.g. "OMPI_COMM_WORLD_SIZE", for messages
  int launcher_local_rank = -1;   // what an MPI launcher said (-1: nothing); checked at init
  // Elastic training (core/elastic_join.h) sets it: connect_world calls it while it waits, and it
  // throws once the round being joined was superseded.
  std::function<void()> abandon_check;
  // Where the launcher reports a lost rank (rendezvous/keys.h kFailureKey; elastic training
  // uses one key per round, as later rounds must not fail on an earlier round's loss).
  std::string failure_key = "kolo/failure";
  static LaunchInfo from_env(const EnvLookup& lookup);
};

}  // namespace kolo::bootstrap
