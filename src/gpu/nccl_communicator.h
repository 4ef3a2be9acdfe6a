// One NCCL communicator, made non-blocking (ncclConfig_t.blocking = 0) so that kolo can abort it
// when a peer dies or stops: a blocking NCCL call would hang the survivors inside NCCL, where
// kolo's CPU fault detection cannot reach them. Every wait here polls ncclCommGetAsyncError and
// asks the caller's watch (kolo's CPU side, which sees a peer's death on its links) between polls;
// a failure aborts the communicator (ncclCommAbort) and throws PeerError naming the rank.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "gpu/nccl_library.h"

namespace kolo::gpu {

// A peer that failed, as kolo's CPU side saw it.
struct PeerFailure {
  int rank = -1;
  std::string what;  // "rank 2 closed its connection", ...
};
// Asked between polls: a failure ends the wait (and the communicator).
using PeerWatch = std::function<std::optional<PeerFailure>()>;

class NcclCommunicator {
 public:
  // ncclCommInitRankConfig with blocking = 0, then waits until it is ready. `id` comes from rank
  // 0's ncclGetUniqueId through kolo's rendezvous. Throws PeerError (a peer failed: aborted) or
  // Error (NCCL failed or `timeout` passed: aborted), naming this rank and NCCL's text.
  static NcclCommunicator create(const NcclLibrary& nccl, int rank, int size,
                                 const ncclUniqueId& id, const PeerWatch& watch,
                                 std::chrono::milliseconds timeout);

  NcclCommunicator(NcclCommunicator&& other) noexcept;
  NcclCommunicator& operator=(NcclCommunicator&&) = delete;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  // Aborts a communicator that is still open (ncclCommAbort never waits for peers).
  ~NcclCommunicator();

  // Waits until the operations issued so far are no longer in progress (ncclInProgress), the
  // same way as create(): NCCL's error or a peer's failure aborts and throws.
  void wait_ready(const PeerWatch& watch, std::chrono::milliseconds timeout, const char* what);
  // ncclCommAbort, once; later calls do nothing.
  void abort();

  [[nodiscard]] ncclComm_t get() const { return comm_; }
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] bool aborted() const { return comm_ == nullptr; }

 private:
  NcclCommunicator(const NcclLibrary& nccl, ncclComm_t comm, int rank, int size)
      : nccl_(&nccl), comm_(comm), rank_(rank), size_(size) {}
  [[noreturn]] void fail(const std::string& message, int peer_rank);

  const NcclLibrary* nccl_;
  ncclComm_t comm_;
  int rank_;
  int size_;
};

// Sends rank 0's bytes to every rank in place (kolo's broadcast over its authenticated links).
using BroadcastFromRankZero = std::function<void(std::span<std::byte>)>;

// A communicator made through kolo's own rendezvous: rank 0 asks NCCL for the unique id
// (ncclGetUniqueId), `share` carries its 128 bytes to the other ranks, then every rank creates
// its communicator (NcclCommunicator::create). Throws as create() does, naming the rank.
NcclCommunicator rendezvous_communicator(const NcclLibrary& nccl, int rank, int size,
                                         const BroadcastFromRankZero& share, const PeerWatch& watch,
                                         std::chrono::milliseconds timeout);

}  // namespace kolo::gpu
