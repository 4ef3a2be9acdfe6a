#include "gpu/nccl_communicator.h"

#include <fmt/format.h>

#include <thread>

#include "base/clock.h"
#include "base/errors.h"

namespace kolo::gpu {

namespace {

// Between polls of a communicator in progress: short, since initialization and collectives
// usually finish within milliseconds, and the poll itself is a cheap host call.
constexpr auto kPollInterval = std::chrono::microseconds(200);

}  // namespace

NcclCommunicator NcclCommunicator::create(const NcclLibrary& nccl, int rank, int size,
                                          const ncclUniqueId& id, const PeerWatch& watch,
                                          std::chrono::milliseconds timeout) {
  if (!nccl.status.loaded) throw Error(fmt::format("rank {}: {}", rank, nccl.status.reason));
  ncclConfig_t config;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t started = nccl.functions.comm_init_rank_config(&comm, size, id, rank, &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    if (comm != nullptr) nccl.functions.comm_abort(comm);
    throw Error(fmt::format("rank {}: ncclCommInitRankConfig ({} ranks): {}", rank, size,
                            nccl_error_text(nccl, started)));
  }
  NcclCommunicator communicator(nccl, comm, rank, size);
  communicator.wait_ready(watch, timeout, "creating the NCCL communicator");
  return communicator;
}

NcclCommunicator::NcclCommunicator(NcclCommunicator&& other) noexcept
    : nccl_(other.nccl_), comm_(other.comm_), rank_(other.rank_), size_(other.size_) {
  other.comm_ = nullptr;
}

NcclCommunicator::~NcclCommunicator() { abort(); }

void NcclCommunicator::abort() {
  if (comm_ == nullptr) return;
  nccl_->functions.comm_abort(comm_);
  comm_ = nullptr;
}

void NcclCommunicator::fail(const std::string& message, int peer_rank) {
  abort();
  if (peer_rank >= 0) throw PeerError(peer_rank, message);
  throw Error(message);
}

void NcclCommunicator::wait_ready(const PeerWatch& watch, std::chrono::milliseconds timeout,
                                  const char* what) {
  if (comm_ == nullptr)
    throw Error(fmt::format("rank {}: {}: the NCCL communicator was aborted", rank_, what));
  const Deadline deadline{timeout};
  for (;;) {
    ncclResult_t state = ncclInProgress;
    const ncclResult_t asked = nccl_->functions.comm_get_async_error(comm_, &state);
    if (asked != ncclSuccess) state = asked;
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      const char* last = nccl_->functions.get_last_error(comm_);
      fail(fmt::format("rank {}: {} ({} ranks): {}{}", rank_, what, size_,
                       nccl_error_text(*nccl_, state),
                       last != nullptr && *last != '\0' ? fmt::format(": {}", last) : ""),
           -1);
    }
    if (watch) {
      if (std::optional<PeerFailure> failure = watch()) {
        fail(fmt::format("rank {}: {}: {}; the NCCL communicator was aborted", rank_, what,
                         failure->what),
             failure->rank);
      }
    }
    if (deadline.expired()) {
      fail(fmt::format("rank {}: {}: still in progress after {} ms; the NCCL communicator was "
                       "aborted",
                       rank_, what, timeout.count()),
           -1);
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

NcclCommunicator rendezvous_communicator(const NcclLibrary& nccl, int rank, int size,
                                         const BroadcastFromRankZero& share, const PeerWatch& watch,
                                         std::chrono::milliseconds timeout) {
  if (!nccl.status.loaded) throw Error(fmt::format("rank {}: {}", rank, nccl.status.reason));
  ncclUniqueId id{};
  if (rank == 0) {
    const ncclResult_t made = nccl.functions.get_unique_id(&id);
    if (made != ncclSuccess) {
      throw Error(fmt::format("rank 0: ncclGetUniqueId: {}", nccl_error_text(nccl, made)));
    }
  }
  share(std::as_writable_bytes(std::span<char>(id.internal)));
  return NcclCommunicator::create(nccl, rank, size, id, watch, timeout);
}

}  // namespace kolo::gpu
