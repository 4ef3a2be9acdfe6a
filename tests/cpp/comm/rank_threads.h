// Test harness: N ranks as threads in one process, every pair joined by an AF_UNIX socket pair
// wrapped in a SocketLink (or, with LinkKind::shm, a shared-memory link whose doorbell is that
// socket pair), each rank with its own Communicator. run() executes one function per
// rank concurrently and reports every rank's failure (with the rank) as a test failure.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "comm/collective_arena.h"
#include "comm/communicator.h"
#include "transport/shm/arena.h"
#include "transport/shm/mapping.h"
#include "transport/shm/shm_link.h"
#include "transport/tcp/socket_link.h"

namespace kolo::comm::testing {

// Generous enough for a loaded 2-core machine, short enough that a bug fails instead of hanging.
inline CommunicatorOptions default_test_options() {
  CommunicatorOptions options;
  options.peer_timeout = std::chrono::seconds(20);
  return options;
}

inline std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

// The rank a PeerError names (-2 for any other exception).
inline int peer_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const PeerError& e) {
    return e.peer_rank();
  } catch (...) {
    return -2;
  }
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// shm_full_barriers: shared-memory links forced onto the fallback without the wait fence
// (transport/wait_fence.h), as on a kernel without membarrier.
enum class LinkKind { socket, shm, shm_full_barriers };

class RankThreads {
 public:
  explicit RankThreads(int size, CommunicatorOptions options = default_test_options())
      : RankThreads(std::vector<CommunicatorOptions>(static_cast<size_t>(size), options)) {}

  // Small rings by default, so that transfers wrap around and wait for room.
  RankThreads(int size, LinkKind kind, size_t shm_ring_bytes = 64 * 1024,
              CommunicatorOptions options = default_test_options())
      : RankThreads(std::vector<CommunicatorOptions>(static_cast<size_t>(size), options), kind,
                    shm_ring_bytes) {}

  // One options value per rank (e.g. a smaller frame limit on one of them).
  // `topology` fakes which ranks share a host (default: all on one).
  // `arena` gives every rank a slot in its host's shared-memory collective arena of that many
  // bytes per slot half (0: no arena), used by automatic choice up to `arena_max_bytes`.
  explicit RankThreads(const std::vector<CommunicatorOptions>& options,
                       LinkKind kind = LinkKind::socket, size_t shm_ring_bytes = 64 * 1024,
                       std::optional<Topology> topology = std::nullopt, size_t arena = 0,
                       size_t arena_max_bytes = SIZE_MAX) {
    const int n = static_cast<int>(options.size());
    links_.resize(options.size());
    for (auto& row : links_) row.resize(options.size());
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        auto [sa, sb] = transport::socket_pair();
        links_[a][b] = transport::make_socket_link(std::move(sa), b, name(b));
        links_[b][a] = transport::make_socket_link(std::move(sb), a, name(a));
        if (kind != LinkKind::socket) {
          const auto fences = kind == LinkKind::shm
                                  ? transport::shm::ShmFences::wait_fence_if_available
                                  : transport::shm::ShmFences::full_barriers;
          // The name only lives between create and open, as in the runtime's handshake.
          const std::string segment = "/kolo-test-" + std::to_string(::getpid()) + "-" +
                                      std::to_string(reinterpret_cast<uintptr_t>(this)) + "-" +
                                      std::to_string(a) + "-" + std::to_string(b);
          std::string why;
          auto created = transport::shm::Segment::create(segment, shm_ring_bytes, why);
          if (!created) throw std::runtime_error(why);
          auto opened = transport::shm::Segment::open(segment, shm_ring_bytes);
          transport::shm::Segment::unlink(segment);
          links_[a][b] = transport::shm::make_shm_link(std::move(*created), true,
                                                       std::move(links_[a][b]), fences);
          links_[b][a] = transport::shm::make_shm_link(std::move(opened), false,
                                                       std::move(links_[b][a]), fences);
        }
      }
    }
    const Topology shared = topology.value_or(Topology::flat(n, true));
    const auto arenas = make_arenas(shared.host_of_rank, arena, arena_max_bytes);
    for (int r = 0; r < n; ++r) {
      std::vector<transport::Link*> peers(options.size(), nullptr);
      for (int p = 0; p < n; ++p) peers[p] = links_[r][p].get();
      Topology rank_topology = shared;
      rank_topology.host_arena = arenas[static_cast<size_t>(r)];
      comms_.push_back(std::make_unique<Communicator>(r, std::move(peers), std::move(rank_topology),
                                                      options[r]));
    }
  }

  [[nodiscard]] int size() const { return static_cast<int>(comms_.size()); }
  Communicator& comm(int rank) { return *comms_[rank]; }

  // Runs fn on every rank at once and returns what each threw (null where it returned). With
  // abort_on_error a failing rank closes its links, as the runtime does, so that its peers fail
  // promptly instead of waiting for the peer timeout.
  std::vector<std::exception_ptr> run_collect(const std::function<void(Communicator&)>& fn,
                                              bool abort_on_error = true) {
    std::vector<std::exception_ptr> errors(comms_.size());
    std::vector<std::thread> threads;
    for (int r = 0; r < size(); ++r) {
      threads.emplace_back([&, r] {
        try {
          fn(*comms_[r]);
        } catch (...) {
          errors[r] = std::current_exception();
          if (abort_on_error) comms_[r]->abort();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    return errors;
  }

  // Runs fn on every rank; each rank's exception becomes a test failure naming the rank.
  bool run(const std::function<void(Communicator&)>& fn) {
    bool ok = true;
    const auto errors = run_collect(fn);
    for (int r = 0; r < size(); ++r) {
      if (errors[r]) {
        ADD_FAILURE() << "rank " << r << " of " << size() << " threw: " << describe(errors[r]);
        ok = false;
      }
    }
    return ok;
  }

 private:
  // One arena per host of `host_of_rank` that runs two or more ranks, mapped once per rank as
  // separate processes would; a rank alone on its host gets none (as at bootstrap).
  std::vector<std::shared_ptr<CollectiveArena>> make_arenas(const std::vector<int>& host_of_rank,
                                                            size_t chunk_bytes, size_t max_bytes) {
    const int n = static_cast<int>(host_of_rank.size());
    std::vector<std::shared_ptr<CollectiveArena>> arenas(static_cast<size_t>(n));
    if (chunk_bytes == 0) return arenas;
    for (int host = 0; host < n; ++host) {
      std::vector<int> members;
      for (int r = 0; r < n; ++r) {
        if (host_of_rank[static_cast<size_t>(r)] == host) members.push_back(r);
      }
      if (members.size() < 2) continue;
      const std::string name = "/kolo-test-" + std::to_string(::getpid()) + "-" +
                               std::to_string(reinterpret_cast<uintptr_t>(this)) + "-arena-" +
                               std::to_string(host);
      const int ranks = static_cast<int>(members.size());
      std::string why;
      auto created = transport::shm::Arena::create(name, ranks, chunk_bytes, why);
      if (!created) throw std::runtime_error(why);
      for (int slot = 1; slot < ranks; ++slot) {
        arenas[static_cast<size_t>(members[static_cast<size_t>(slot)])] =
            std::make_shared<CollectiveArena>(
                transport::HostArena{std::make_unique<transport::shm::Arena>(
                                         transport::shm::Arena::open(name, ranks, chunk_bytes)),
                                     slot, members},
                max_bytes);
      }
      transport::shm::Mapping::unlink(name);
      arenas[static_cast<size_t>(members.front())] = std::make_shared<CollectiveArena>(
          transport::HostArena{std::make_unique<transport::shm::Arena>(std::move(*created)), 0,
                               members},
          max_bytes);
    }
    return arenas;
  }

  static std::string name(int rank) { return "rank " + std::to_string(rank) + " (socketpair)"; }

  std::vector<std::vector<std::unique_ptr<transport::Link>>> links_;  // links_[rank][peer]
  std::vector<std::unique_ptr<Communicator>> comms_;
};

}  // namespace kolo::comm::testing
