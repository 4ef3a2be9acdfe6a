#include "bootstrap/bootstrap.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "base/errors.h"
#include "base/name_list.h"
#include "bootstrap/machine_identity.h"
#include "bootstrap/peer_wait.h"
#include "comm/collective_arena.h"
#include "rendezvous/peer_version.h"
#include "rendezvous/tcp_store.h"
#include "transport/shm/arena_setup.h"
#include "transport/shm/job_names.h"
#include "transport/shm/upgrade.h"
#include "transport/tcp/interfaces.h"
#include "transport/tcp/mesh.h"

namespace kolo::bootstrap {

namespace {

std::string this_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

// Every address this rank may be reached at, best first (see transport/tcp/interfaces.h), as
// "a:port,b:port"; this host's name when it has no usable address at all.
std::string published_addresses(const Options& options, const LaunchInfo& launch,
                                const std::string& hostname, uint16_t port) {
  std::vector<std::string> addresses;
  try {
    addresses =
        transport::candidate_addresses(transport::up_ipv4_interfaces(), options.network_interfaces,
                                       transport::address_toward(launch.rendezvous_addr));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("rank {} on host '{}': {}", launch.rank, hostname, e.what()));
  }
  if (addresses.empty()) addresses.push_back(this_hostname());
  std::string text;
  for (const auto& address : addresses) {
    text += (text.empty() ? "" : ",") + transport::Endpoint{address, port}.to_string();
  }
  return text;
}

std::vector<transport::Endpoint> parse_addresses(const std::string& text) {
  std::vector<transport::Endpoint> endpoints;
  for (const auto& item : parse_name_list(text)) {
    endpoints.push_back(transport::Endpoint::parse(item));
  }
  return endpoints;
}

std::string key(uint64_t round, const char* what, int rank) {
  return fmt::format("kolo/round{}/{}/{}", round, what, rank);
}

}  // namespace

Connected connect_world(const LaunchInfo& launch, const Options& options, uint64_t round,
                        const Logger& logger) {
  const std::string hostname = launch.hostname.empty() ? this_hostname() : launch.hostname;
  Connected connected;
  if (launch.size == 1) {
    connected.world = WorldInfo::from_hostnames(0, {hostname});
    connected.links.resize(1);
    return connected;
  }
  if (launch.secret_hex.empty()) {
    throw InvalidArgument(
        "no job secret (KOLO_SECRET) in the environment: start the job with "
        "kolorun or horovodrun");
  }
  const auto secret = transport::Secret::from_hex(launch.secret_hex);
  const transport::Endpoint server{launch.rendezvous_addr, launch.rendezvous_port};
  auto owned_store = std::make_unique<rendezvous::TcpStore>(server, secret, options.start_timeout);
  rendezvous::Store& store = *owned_store;

  transport::Socket listener = transport::listen_tcp("", 0);
  const std::string addresses =
      published_addresses(options, launch, hostname, transport::local_port(listener));
  // Before the host key: a peer that sees our host sees our version too.
  rendezvous::publish_version(store, key(round, "protocol", launch.rank), options.protocol_version);
  const HostRecord mine{hostname, launch.machine};
  store.set(key(round, "host", launch.rank), host_record_text(mine));
  store.set(key(round, "addr", launch.rank), addresses);
  logger.debug("listening at {} (host '{}'), waiting for {} peers at {}", addresses, hostname,
               launch.size - 1, server.to_string());

  std::vector<std::string> hostnames(launch.size);
  std::vector<HostRecord> records(launch.size);
  transport::MeshOptions mesh;
  mesh.rank = launch.rank;
  mesh.size = launch.size;
  mesh.round = round;
  mesh.endpoints.resize(launch.size);
  for (int r = 0; r < launch.size; ++r) {
    records[r] = parse_host_record(await_peer_key(store, key(round, "host", r), r,
                                                  options.start_timeout, server.to_string(),
                                                  launch.failure_key, launch.abandon_check));
    hostnames[r] = records[r].hostname;
    if (r != launch.rank) {
      rendezvous::check_peer_version(store, key(round, "protocol", r), launch.rank, r,
                                     options.protocol_version, "negotiation protocol");
    }
    mesh.endpoints[r] = parse_addresses(await_peer_key(store, key(round, "addr", r), r,
                                                       options.start_timeout, server.to_string(),
                                                       launch.failure_key, launch.abandon_check));
  }
  mesh.hosts = hostnames;
  // Ranks of one machine meet in shared memory even when the launch named their hosts apart.
  const std::vector<int> groups = memory_groups(records);
  std::vector<bool> shares(static_cast<size_t>(launch.size));
  for (int r = 0; r < launch.size; ++r) shares[r] = groups[r] == groups[launch.rank];
  mesh.deadline = Deadline(options.start_timeout);
  mesh.abandon_check = launch.abandon_check;
  connected.links = transport::connect_mesh(mesh, listener, secret, logger);
  std::shared_ptr<comm::CollectiveArena> arena;
  if (!options.shm_disable && options.shm_allreduce_bytes > 0) {
    // Before the links turn into shared-memory ones: the handshake wants plain sockets.
    transport::shm::ArenaOptions arena_options;
    arena_options.rank = launch.rank;
    arena_options.round = round;
    arena_options.job_tag = transport::shm::job_tag(launch.secret_hex);
    arena_options.same_host = shares;
    arena_options.deadline = Deadline(options.start_timeout);
    if (auto host = transport::shm::setup_host_arena(connected.links, arena_options, logger)) {
      logger.debug("shared-memory collective arena for the {} ranks of this host",
                   host->members.size());
      arena =
          std::make_shared<comm::CollectiveArena>(std::move(*host), options.shm_allreduce_bytes);
      arena->single_copy_allowed = options.shm_single_copy.value_or(true);
      arena->single_copy_measured = !options.shm_single_copy.has_value();
      arena->fold_whole_bytes = options.shm_fold_whole_bytes;
    }
  }
  if (!options.shm_disable) {
    transport::shm::UpgradeOptions shm;
    shm.rank = launch.rank;
    shm.round = round;
    shm.job_tag = transport::shm::job_tag(launch.secret_hex);
    shm.ring_bytes = options.shm_ring_bytes;
    shm.same_host = shares;
    shm.deadline = Deadline(options.start_timeout);
    const int upgraded = transport::shm::upgrade_same_host_links(connected.links, shm, logger);
    logger.debug("{} same-host peer(s) on shared memory", upgraded);
  }
  connected.world = WorldInfo::from_hostnames(launch.rank, std::move(hostnames));
  connected.world.topology.host_arena = std::move(arena);
  connected.store = std::move(owned_store);
  return connected;
}

}  // namespace kolo::bootstrap
