#include "core/bootstrap.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "base/errors.h"
#include "rendezvous/tcp_store.h"
#include "comm/collective_arena.h"
#include "transport/shm/arena_setup.h"
#include "transport/shm/job_names.h"
#include "transport/shm/upgrade.h"
#include "transport/tcp/mesh.h"

namespace kolo::core {

namespace {

std::string this_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// The local address that routes toward the rendezvous server: the one peers can most likely reach
// us at. A UDP connect() only consults the routing table; no packet is sent.
std::string routable_address_toward(const std::string& server) {
  if (is_loopback(server)) return "127.0.0.1";
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(9);
  if (::inet_pton(AF_INET, server.c_str(), &target.sin_addr) != 1) return this_hostname();
  int probe = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return this_hostname();
  std::string address = this_hostname();
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  if (::connect(probe, reinterpret_cast<sockaddr*>(&target), sizeof(target)) == 0 &&
      ::getsockname(probe, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)) != nullptr) address = text;
  }
  ::close(probe);
  return address;
}

std::string key(uint64_t round, const char* what, int rank) {
  return fmt::format("kolo/round{}/{}/{}", round, what, rank);
}

}  // namespace

Connected bootstrap(const LaunchInfo& launch, const Config& config, uint64_t round,
                    const Logger& logger) {
  const std::string hostname = launch.hostname.empty() ? this_hostname() : launch.hostname;
  Connected connected;
  if (launch.size == 1) {
    connected.world = WorldInfo::from_hostnames(0, {hostname});
    connected.links.resize(1);
    return connected;
  }
  if (launch.secret_hex.empty()) {
    throw InvalidArgument("no job secret (KOLO_SECRET) in the environment: start the job with "
                          "kolorun or horovodrun");
  }
  const auto secret = transport::Secret::from_hex(launch.secret_hex);
  const transport::Endpoint server{launch.rendezvous_addr, launch.rendezvous_port};
  auto owned_store = std::make_unique<rendezvous::TcpStore>(server, secret, config.start_timeout);
  rendezvous::Store& store = *owned_store;

  transport::Socket listener = transport::listen_tcp("", 0);
  const std::string address = routable_address_toward(launch.rendezvous_addr);
  const uint16_t port = transport::local_port(listener);
  store.set(key(round, "host", launch.rank), hostname);
  store.set(key(round, "addr", launch.rank), fmt::format("{}:{}", address, port));
  logger.debug("listening on {}:{} (host '{}'), waiting for {} peers at {}", address, port,
               hostname, launch.size - 1, server.to_string());

  std::vector<std::string> hostnames(launch.size);
  transport::MeshOptions mesh;
  mesh.rank = launch.rank;
  mesh.size = launch.size;
  mesh.round = round;
  mesh.endpoints.resize(launch.size);
  for (int r = 0; r < launch.size; ++r) {
    hostnames[r] = store.get(key(round, "host", r), config.start_timeout);
    mesh.endpoints[r] = transport::Endpoint::parse(store.get(key(round, "addr", r),
                                                             config.start_timeout));
  }
  mesh.deadline = Deadline(config.start_timeout);
  connected.links = transport::connect_mesh(mesh, listener, secret, logger);
  std::shared_ptr<comm::CollectiveArena> arena;
  if (!config.shm_disable && config.shm_allreduce_bytes > 0) {
    // Before the links turn into shared-memory ones: the handshake wants plain sockets.
    transport::shm::ArenaOptions options;
    options.rank = launch.rank;
    options.round = round;
    options.job_tag = transport::shm::job_tag(launch.secret_hex);
    for (int r = 0; r < launch.size; ++r) options.same_host.push_back(hostnames[r] == hostname);
    options.deadline = Deadline(config.start_timeout);
    if (auto host = transport::shm::setup_host_arena(connected.links, options, logger)) {
      logger.debug("shared-memory collective arena for the {} ranks of this host",
                   host->members.size());
      arena = std::make_shared<comm::CollectiveArena>(std::move(*host), config.shm_allreduce_bytes);
    }
  }
  if (!config.shm_disable) {
    transport::shm::UpgradeOptions shm;
    shm.rank = launch.rank;
    shm.round = round;
    shm.job_tag = transport::shm::job_tag(launch.secret_hex);
    shm.ring_bytes = config.shm_ring_bytes;
    for (int r = 0; r < launch.size; ++r) shm.same_host.push_back(hostnames[r] == hostname);
    shm.deadline = Deadline(config.start_timeout);
    const int upgraded = transport::shm::upgrade_same_host_links(connected.links, shm, logger);
    logger.debug("{} same-host peer(s) on shared memory", upgraded);
  }
  connected.world = WorldInfo::from_hostnames(launch.rank, std::move(hostnames));
  connected.world.topology.host_arena = std::move(arena);
  connected.store = std::move(owned_store);
  return connected;
}

}  // namespace kolo::core
