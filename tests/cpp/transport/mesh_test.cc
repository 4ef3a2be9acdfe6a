#include "transport/tcp/mesh.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "transport/refusing_port.h"
#include "transport/test_support.h"

namespace kolo::transport {
namespace {

using namespace std::chrono_literals;
using Links = std::vector<std::unique_ptr<Link>>;

// Whole-buffer transfers over the non-blocking Link interface, bounded by a deadline.
void send_exact(Link& link, const std::string& text, Deadline deadline) {
  ConstBytes rest(reinterpret_cast<const std::byte*>(text.data()), text.size());
  while (!rest.empty()) {
    const size_t n = link.send_some(rest);
    rest = rest.subspan(n);
    if (n == 0) {
      pollfd entry{link.fd(), POLLOUT, 0};
      ASSERT_GE(::poll(&entry, 1, deadline.remaining_ms()), 0);
      ASSERT_FALSE(deadline.expired()) << "send to " << link.peer_description() << " stalled";
    }
  }
}

std::string recv_exact(Link& link, size_t size, Deadline deadline) {
  std::string text(size, '\0');
  Bytes rest(reinterpret_cast<std::byte*>(text.data()), text.size());
  while (!rest.empty()) {
    const size_t n = link.recv_some(rest);
    rest = rest.subspan(n);
    if (n == 0) {
      pollfd entry{link.fd(), POLLIN, 0};
      if (::poll(&entry, 1, deadline.remaining_ms()) < 0 || deadline.expired()) {
        ADD_FAILURE() << "receive from " << link.peer_description() << " timed out";
        return text;
      }
    }
  }
  return text;
}

// Runs ranks [0, size) as threads, each with its own listener; `secret_for(rank)` and
// `round_for(rank)` let a test make one rank an outsider. Ranks in `absent` never start.
struct MeshRun {
  int size = 2;
  Secret secret = Secret::generate();
  std::function<Secret(int)> secret_for;
  std::function<uint64_t(int)> round_for = [](int) { return uint64_t{0}; };
  std::vector<int> absent;
  Duration timeout = 10s;
  const Logger* logger = nullptr;

  std::vector<Socket> listeners;
  std::vector<std::vector<Endpoint>> endpoints;  // each rank's candidate addresses, best first
  Duration attempt_timeout = 3s;
  std::vector<std::string> hosts;
  std::vector<Links> links;
  std::vector<std::exception_ptr> errors;

  void open_listeners() {
    for (int r = 0; r < size; ++r) {
      listeners.push_back(listen_tcp("127.0.0.1", 0));
      endpoints.push_back({{"127.0.0.1", local_port(listeners.back())}});
    }
  }

  void run() {
    if (listeners.empty()) open_listeners();
    links.clear();
    links.resize(size);
    errors.assign(size, nullptr);
    Logger quiet(LogLevel::off);
    const Logger& log = logger != nullptr ? *logger : quiet;
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) {
      if (std::find(absent.begin(), absent.end(), r) != absent.end()) continue;
      threads.emplace_back([this, r, &log] {
        MeshOptions options;
        options.rank = r;
        options.size = size;
        options.round = round_for(r);
        options.endpoints = endpoints;
        options.deadline = Deadline(timeout);
        options.handshake_timeout = 500ms;
        options.attempt_timeout = attempt_timeout;
        options.hosts = hosts;
        try {
          links[r] = connect_mesh(options, listeners[r], secret_for ? secret_for(r) : secret, log);
        } catch (...) {
          errors[r] = std::current_exception();
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }

  std::string error_text(int rank) const {
    if (!errors[rank]) return "";
    try {
      std::rethrow_exception(errors[rank]);
    } catch (const std::exception& e) {
      return e.what();
    }
  }
};

void expect_full_mesh_carries_bytes(MeshRun& run) {
  for (int r = 0; r < run.size; ++r) {
    ASSERT_EQ(run.error_text(r), "") << "rank " << r;
    ASSERT_EQ(run.links[r].size(), static_cast<size_t>(run.size));
    for (int p = 0; p < run.size; ++p) {
      if (p == r) {
        EXPECT_EQ(run.links[r][p], nullptr);
        continue;
      }
      ASSERT_NE(run.links[r][p], nullptr) << r << " -> " << p;
      EXPECT_EQ(run.links[r][p]->peer_rank(), p);
      const std::string& description = run.links[r][p]->peer_description();
      EXPECT_NE(description.find("rank " + std::to_string(p) + " (127.0.0.1:"), std::string::npos)
          << description;
    }
  }
  // Every ordered pair, both ways: the link r->p reaches the rank it says it does.
  for (int r = 0; r < run.size; ++r) {
    for (int p = 0; p < run.size; ++p) {
      if (p == r) continue;
      const std::string message = "from " + std::to_string(r) + " to " + std::to_string(p);
      send_exact(*run.links[r][p], message, Deadline(5s));
      EXPECT_EQ(recv_exact(*run.links[p][r], message.size(), Deadline(5s)), message);
    }
  }
}

class MeshSizes : public ::testing::TestWithParam<int> {};

TEST_P(MeshSizes, FormsAFullMeshThatCarriesBytesBothWays) {
  MeshRun run;
  run.size = GetParam();
  run.run();
  expect_full_mesh_carries_bytes(run);
}

INSTANTIATE_TEST_SUITE_P(Ranks, MeshSizes, ::testing::Values(1, 2, 3, 5));

TEST(Mesh, ImpostorWithWrongSecretIsRefusedLoggedAndTheMeshStillForms) {
  kolo::testing::LogCapture log;
  MeshRun run;
  run.size = 3;
  run.logger = &log.logger();
  run.open_listeners();
  // The impostor is first in rank 0's accept queue.
  Socket impostor = connect_tcp(run.endpoints[0][0], Deadline(5s));
  const uint16_t impostor_port = local_port(impostor);
  std::exception_ptr impostor_error;
  std::thread impostor_thread([&] {
    try {
      authenticate_client(impostor, Secret::generate(), Deadline(5s), "rank 0");
    } catch (...) {
      impostor_error = std::current_exception();
    }
  });
  run.run();
  impostor_thread.join();
  expect_full_mesh_carries_bytes(run);
  ASSERT_TRUE(impostor_error);
  EXPECT_THROW(std::rethrow_exception(impostor_error), ProtocolError);
  const std::string text = log.text();
  EXPECT_NE(text.find("127.0.0.1:" + std::to_string(impostor_port)), std::string::npos) << text;
  EXPECT_NE(text.find("authentication"), std::string::npos) << text;
  EXPECT_NE(text.find("WARNING"), std::string::npos) << text;
}

TEST(Mesh, SilentConnectionIsDroppedAfterTheHandshakeTimeout) {
  kolo::testing::LogCapture log;
  MeshRun run;
  run.size = 2;
  run.logger = &log.logger();
  run.open_listeners();
  Socket silent = connect_tcp(run.endpoints[0][0], Deadline(5s));
  const auto start = std::chrono::steady_clock::now();
  run.run();
  expect_full_mesh_carries_bytes(run);
  EXPECT_LT(kolo::testing::seconds_since(start), 5.0);
  EXPECT_NE(log.text().find("timed out"), std::string::npos) << log.text();
}

TEST(Mesh, RankFromAnotherRoundIsRefusedWithTheReason) {
  kolo::testing::LogCapture log;
  MeshRun run;
  run.size = 2;
  run.logger = &log.logger();
  run.round_for = [](int rank) { return rank == 1 ? uint64_t{7} : uint64_t{3}; };
  run.timeout = 1500ms;
  run.run();
  EXPECT_NE(run.error_text(1).find("round"), std::string::npos) << run.error_text(1);
  EXPECT_THROW(std::rethrow_exception(run.errors[1]), ProtocolError);
  EXPECT_THROW(std::rethrow_exception(run.errors[0]), TimeoutError);
  EXPECT_NE(log.text().find("round 7"), std::string::npos) << log.text();
}

TEST(Mesh, RankWithWrongSecretFailsAndTheOthersTimeOut) {
  MeshRun run;
  run.size = 2;
  const Secret other = Secret::generate();
  run.secret_for = [&](int rank) { return rank == 1 ? other : run.secret; };
  run.timeout = 1s;
  run.run();
  EXPECT_THROW(std::rethrow_exception(run.errors[1]), ProtocolError);
  EXPECT_NE(run.error_text(1).find("authentication"), std::string::npos) << run.error_text(1);
  EXPECT_THROW(std::rethrow_exception(run.errors[0]), TimeoutError);
}

TEST(Mesh, TimeoutNamesTheRanksThatNeverConnected) {
  MeshRun run;
  run.size = 4;
  run.absent = {3};
  run.timeout = 700ms;
  const auto start = std::chrono::steady_clock::now();
  run.run();
  EXPECT_LT(kolo::testing::seconds_since(start), 5.0);
  for (int r = 0; r < 3; ++r) {
    EXPECT_THROW(std::rethrow_exception(run.errors[r]), TimeoutError) << "rank " << r;
    EXPECT_NE(run.error_text(r).find("rank(s) 3 never connected"), std::string::npos)
        << run.error_text(r);
  }
}

TEST(Mesh, TimeoutNamesTheRankItCouldNotReach) {
  MeshRun run;
  run.size = 2;
  run.absent = {0};
  run.timeout = 500ms;
  run.open_listeners();
  run.listeners[0].reset();  // rank 0 is not even listening
  run.run();
  EXPECT_THROW(std::rethrow_exception(run.errors[1]), TimeoutError);
  EXPECT_NE(run.error_text(1).find("could not connect to rank(s) 0"), std::string::npos)
      << run.error_text(1);
}

TEST(MeshCandidates, APeerIsReachedAtItsSecondAddressWhenTheFirstIsAClosedPort) {
  MeshRun run;
  run.size = 3;
  run.attempt_timeout = 300ms;
  run.timeout = 30s;  // the bound: every rank must be connected well before it
  run.open_listeners();
  const testing::RefusingPort closed;
  for (auto& candidates : run.endpoints) candidates.insert(candidates.begin(), closed.endpoint());
  run.run();
  expect_full_mesh_carries_bytes(run);
}

TEST(MeshCandidates, AnAddressThatNeverAnswersCostsOneAttemptTimeout) {
  // A listener nobody accepts on: the TCP connect completes (kernel backlog) but no greeting ever
  // comes, like a firewalled or foreign interface that swallows the handshake.
  Socket silent = listen_tcp("127.0.0.1", 0);
  MeshRun run;
  run.size = 2;
  run.attempt_timeout = 300ms;
  run.timeout = 30s;
  run.open_listeners();
  run.endpoints[0].insert(run.endpoints[0].begin(), {"127.0.0.1", local_port(silent)});
  run.run();
  expect_full_mesh_carries_bytes(run);
}

TEST(MeshCandidates, AnAddressLeadingToAnotherRankIsRefusedAndTheNextIsTried) {
  // Rank 0's first published address is really rank 1's listener, as when two hosts share a
  // docker0 address: rank 1 must not take ranks 2 and 3 for itself, and they must reach rank 0.
  MeshRun run;
  run.size = 4;
  run.attempt_timeout = 2s;
  run.timeout = 30s;
  run.open_listeners();
  run.endpoints[0].insert(run.endpoints[0].begin(), run.endpoints[1][0]);
  run.run();
  expect_full_mesh_carries_bytes(run);
}

TEST(MeshCandidates, AnUnreachablePeerIsNamedWithItsHostAndEveryAddressTried) {
  MeshRun run;
  run.size = 2;
  run.absent = {0};
  run.hosts = {"node-a", "node-b"};
  run.attempt_timeout = 200ms;
  run.timeout = 1500ms;
  run.open_listeners();
  const testing::RefusingPort closed;
  const Endpoint first = closed.endpoint();
  Socket silent = listen_tcp("127.0.0.1", 0);
  const Endpoint second{"127.0.0.1", local_port(silent)};
  run.endpoints[0] = {first, second};
  run.run();
  EXPECT_THROW(std::rethrow_exception(run.errors[1]), TimeoutError);
  const std::string text = run.error_text(1);
  EXPECT_NE(text.find("rank 0 on host 'node-a'"), std::string::npos) << text;
  EXPECT_NE(text.find(first.to_string() + ": timed out connecting"), std::string::npos) << text;
  EXPECT_NE(text.find(second.to_string() + ": "), std::string::npos) << text;
  EXPECT_NE(text.find("greeting"), std::string::npos) << text;
}

TEST(Mesh, RejectsInconsistentOptions) {
  Socket listener = listen_tcp("127.0.0.1", 0);
  Logger quiet(LogLevel::off);
  MeshOptions options;
  options.rank = 0;
  options.size = 2;
  options.endpoints = {{{"127.0.0.1", local_port(listener)}}};
  EXPECT_THROW(connect_mesh(options, listener, Secret::generate(), quiet), InvalidArgument);
  options.endpoints.push_back(options.endpoints[0]);
  options.rank = 2;
  EXPECT_THROW(connect_mesh(options, listener, Secret::generate(), quiet), InvalidArgument);
}

}  // namespace
}  // namespace kolo::transport
