// The rendezvous of a job started by mpirun (or srun) without kolorun: rank 0 starts kolo's
// authenticated store server in-process on a free port with a fresh secret, MPI_Bcast hands
// "address:port" and the secret to every rank, and the usual bootstrap (bootstrap.h) follows
// unchanged. MPI comes from the plugin; without it the error says what to install.
#pragma once

#include <memory>

#include "base/logger.h"
#include "bootstrap/launch_info.h"
#include "rendezvous/tcp_store.h"

namespace kolo::bootstrap {

// Fills launch.rendezvous_addr/port/secret_hex (all ranks call it together). Returns rank 0's
// store server, which must outlive the session; null on the other ranks.
std::unique_ptr<rendezvous::TcpStoreServer> exchange_rendezvous_over_mpi(LaunchInfo& launch,
                                                                         const Logger& logger);

}  // namespace kolo::bootstrap
