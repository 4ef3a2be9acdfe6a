#include "bootstrap/mpi_bootstrap.h"

#include <unistd.h>

#include <array>
#include <cstring>
#include <sstream>
#include <vector>

#include "backends/mpi_plugin.h"
#include "base/errors.h"
#include "transport/tcp/auth.h"

namespace kolo::bootstrap {

namespace {

constexpr size_t kHostnameBytes = 256;
constexpr size_t kPayloadBytes = 512;  // "address port secret_hex", NUL-padded

std::string this_hostname() {
  std::array<char, kHostnameBytes> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "localhost";
  return name.data();
}

const backends::MpiPlugin& plugin_for(const LaunchInfo& launch) {
  try {
    return backends::MpiPlugin::get();
  } catch (const Error& error) {
    throw Error(fmt::format(
        "this process was started by an MPI launcher ({}={}) without kolorun, so kolo must "
        "exchange its rendezvous address over MPI, but {}. Alternatively start the job with "
        "kolorun/horovodrun",
        launch.mpi_size_variable, launch.size, error.what()));
  }
}

// Whether every rank runs on this host: then the store listens on loopback only.
bool all_ranks_here(const KoloMpiPluginV1& mpi, int size) {
  std::array<char, kHostnameBytes> mine{};
  const std::string hostname = this_hostname();
  std::memcpy(mine.data(), hostname.data(), std::min(hostname.size(), mine.size() - 1));
  std::vector<char> everyone(kHostnameBytes * static_cast<size_t>(size));
  const std::vector<size_t> bytes(static_cast<size_t>(size), kHostnameBytes);
  KoloMpiError error{};
  backends::MpiPlugin::check(
      mpi.allgatherv(nullptr, mine.data(), everyone.data(), bytes.data(), &error), error,
      "kolo rendezvous over MPI: gathering host names");
  for (int r = 0; r < size; ++r) {
    if (std::strncmp(everyone.data() + kHostnameBytes * r, mine.data(), kHostnameBytes) != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::unique_ptr<rendezvous::TcpStoreServer> exchange_rendezvous_over_mpi(LaunchInfo& launch,
                                                                         const Logger& logger) {
  const backends::MpiPlugin& plugin = plugin_for(launch);
  plugin.initialize();
  const auto [mpi_rank, mpi_size] = plugin.world();
  if (mpi_rank != launch.rank || mpi_size != launch.size) {
    throw Error(fmt::format(
        "the launcher says rank {} of {} ({}), but MPI_COMM_WORLD has rank {} of {}: either "
        "kolo's MPI plugin ({}, {}) is built against another MPI than the launcher's, or the "
        "launcher gave MPI no job to join (with Slurm: srun --mpi=pmix)",
        launch.rank, launch.size, launch.mpi_size_variable, mpi_rank, mpi_size, plugin.path(),
        plugin.library_version()));
  }
  const KoloMpiPluginV1& mpi = plugin.table();
  const bool local_job = all_ranks_here(mpi, launch.size);

  std::unique_ptr<rendezvous::TcpStoreServer> server;
  std::array<char, kPayloadBytes> payload{};
  if (launch.rank == 0) {
    const auto secret = transport::Secret::generate();
    // Loopback when the whole job is on this host; otherwise every interface, advertised by
    // host name (peers resolve it as mpirun itself reached this host).
    const std::string bind_host = local_job ? "127.0.0.1" : "";
    const std::string address = local_job ? "127.0.0.1" : this_hostname();
    server = std::make_unique<rendezvous::TcpStoreServer>(bind_host, 0, secret, logger);
    const std::string text = fmt::format("{} {} {}", address, server->port(), secret.to_hex());
    if (text.size() >= payload.size()) {
      throw Error(fmt::format("host name '{}' is too long for the MPI rendezvous", address));
    }
    std::memcpy(payload.data(), text.data(), text.size());
  }
  KoloMpiError error{};
  backends::MpiPlugin::check(mpi.broadcast(nullptr, payload.data(), payload.size(), 0, &error),
                             error, "kolo rendezvous over MPI: broadcasting the store address");
  payload.back() = '\0';
  std::istringstream fields(payload.data());
  unsigned port = 0;
  fields >> launch.rendezvous_addr >> port >> launch.secret_hex;
  if (!fields || port == 0 || port > 65535) {
    throw ProtocolError(fmt::format("kolo rendezvous over MPI: malformed address from rank 0: '{}'",
                                    payload.data()));
  }
  launch.rendezvous_port = static_cast<uint16_t>(port);
  logger.debug("rendezvous over MPI: store at {}:{}", launch.rendezvous_addr,
               launch.rendezvous_port);
  return server;
}

}  // namespace kolo::bootstrap
