// Test harness: `size` ranks as threads in this process, each with a comm::Communicator over
// AF_UNIX socket pairs. A rank that throws aborts its communicator so the others fail fast with
// a PeerError instead of waiting; every wait is bounded by a short peer timeout, so a protocol
// bug shows up as a failed test, never a hung one.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "transport/tcp/socket_link.h"

namespace kolo::testing {

template <typename Result>
std::vector<Result> run_ranks(int size, const std::function<Result(comm::Communicator&)>& body,
                              std::chrono::milliseconds peer_timeout = std::chrono::seconds(10)) {
  // links[i][j]: rank i's link to rank j.
  std::vector<std::vector<std::unique_ptr<transport::Link>>> links(static_cast<size_t>(size));
  for (auto& row : links) row.resize(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) {
    for (int j = i + 1; j < size; ++j) {
      auto [a, b] = transport::socket_pair();
      links[i][j] = transport::make_socket_link(std::move(a), j, "rank " + std::to_string(j));
      links[j][i] = transport::make_socket_link(std::move(b), i, "rank " + std::to_string(i));
    }
  }

  std::vector<Result> results(static_cast<size_t>(size));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      std::vector<transport::Link*> mine;
      for (auto& link : links[rank]) mine.push_back(link.get());
      comm::CommunicatorOptions options;
      options.peer_timeout = peer_timeout;
      comm::Communicator communicator(rank, mine, comm::Topology::flat(size, true), options);
      try {
        results[rank] = body(communicator);
      } catch (...) {
        errors[rank] = std::current_exception();
        communicator.abort();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int rank = 0; rank < size; ++rank) {
    if (errors[rank]) {
      try {
        std::rethrow_exception(errors[rank]);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << rank << " threw: " << e.what();
      }
    }
  }
  return results;
}

}  // namespace kolo::testing
