// core::ProcessSet: one group of ranks that runs collectives together (Horovod's process sets).
// Each set has its own communicator (a subgroup over the session's links; the global set uses
// the session's communicator itself), its own controller (negotiation and response cache, ranks
// numbered 0..k-1 within the set), backend, executor and pending entries, so a set's tensors
// never wait on another set's. Everything here is used by the session's background thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "base/logger.h"
#include "comm/communicator.h"
#include "core/config.h"
#include "core/executor.h"
#include "core/handle_table.h"
#include "core/stall_inspector.h"
#include "core/tensor_entry.h"
#include "negotiation/controller.h"

namespace kolo::core {

inline constexpr int32_t kGlobalProcessSet = 0;

// Creates the backend that runs a set's collectives over that set's communicator (one call per
// set, so a backend such as MPI can build a communicator of its own per set).
using BackendFactory =
    std::function<std::unique_ptr<backends::Backend>(comm::Communicator& set_comm)>;

class ProcessSet {
 public:
  // `ranks`: ascending world ranks, containing world.rank(). The global set (id 0) runs on
  // `world` itself; any other set on a subgroup of it.
  ProcessSet(int32_t id, std::vector<int> ranks, comm::Communicator& world, const Config& config,
             const BackendFactory& make_backend, HandleTable& handles, const Logger& logger);
  ProcessSet(const ProcessSet&) = delete;
  ProcessSet& operator=(const ProcessSet&) = delete;

  [[nodiscard]] int32_t id() const { return id_; }
  [[nodiscard]] const std::vector<int>& ranks() const { return ranks_; }
  [[nodiscard]] negotiation::Controller& controller() { return *controller_; }
  [[nodiscard]] const negotiation::Controller& controller() const { return *controller_; }
  [[nodiscard]] Executor& executor() { return *executor_; }
  [[nodiscard]] const Executor& executor() const { return *executor_; }
  // Entries this rank submitted to the set that have no response yet, by name.
  [[nodiscard]] std::map<std::string, TensorEntry>& pending() { return pending_; }

  // Runs one cycle's agreed responses. `joined`: this rank had joined (hvd.join()) during the
  // cycle, so it takes part with zeros in allreduces (and in barriers) it never submitted;
  // `join_device`: the CUDA device hvd.join(device) named for those zeros (-1: none).
  void execute(const std::vector<negotiation::Response>& responses, bool joined,
               int join_device = -1);

  // The stall inspector of a set other than the global one (whose inspector lives in
  // Observability), run by the set's coordinator after each of its cycles: warns which job ranks
  // have not submitted which tensors and, past HOROVOD_STALL_SHUTDOWN_TIME_SECONDS, fails them on
  // every member, so that ranks calling a collective on different sets cannot wait forever.
  void inspect_stalls(const Logger& logger);

 private:
  void add_joined_stand_ins(const std::vector<negotiation::Response>& responses, int join_device);

  int32_t id_;
  std::vector<int> ranks_;
  std::unique_ptr<comm::Communicator> own_comm_;  // subgroup; null for the global set
  comm::Communicator& comm_;
  std::unique_ptr<negotiation::Controller> controller_;
  std::unique_ptr<backends::Backend> backend_;
  std::unique_ptr<Executor> executor_;
  std::map<std::string, TensorEntry> pending_;
  std::optional<StallInspector> stall_;  // non-global sets, on the set's coordinator only
};

}  // namespace kolo::core
