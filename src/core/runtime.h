// core::Runtime: the only process-wide object in kolo. It owns the handle table (which outlives
// sessions, so a handle from before a shutdown still reports its failure), the logger, and the
// current Session. init() after shutdown() starts a new session (elastic training needs it).
#pragma once

#include <memory>
#include <mutex>

#include "base/logger.h"
#include "core/config.h"
#include "core/handle_table.h"
#include "core/session.h"
#include "rendezvous/tcp_store.h"

namespace kolo::core {

class Runtime {
 public:
  Runtime() = default;
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Reads the configuration and launch information from the environment and joins the job.
  // A second init() while initialized does nothing (as Horovod).
  void init();
  void shutdown();
  [[nodiscard]] bool initialized() const;

  // Throws kolo::Error("kolo is not initialized ...") when not initialized.
  [[nodiscard]] bootstrap::WorldInfo world() const;
  [[nodiscard]] SessionStats stats() const;
  [[nodiscard]] Config config() const;

  HandleId enqueue(TensorEntry entry);

  // Process sets (collective over all ranks, blocking; see Session). During init() the sets
  // given to hvd.init(process_sets=...) are added whatever DYNAMIC_PROCESS_SETS says; later
  // additions and removals need it (as Horovod).
  int32_t add_process_set(std::vector<int> ranks, bool during_init);
  // False for the global set or an unknown id; throws if a member has operations pending on it.
  bool remove_process_set(int32_t id);
  [[nodiscard]] std::vector<int> process_set_ranks(int32_t id) const;
  [[nodiscard]] std::vector<int32_t> process_set_ids() const;
  // hvd.join(): blocks until every rank joined; returns the last rank that joined.
  int join();
  [[nodiscard]] bool poll(HandleId handle) const { return handles_.poll(handle); }
  void wait(HandleId handle) const { handles_.wait(handle); }
  OwnedBuffer release(HandleId handle) { return handles_.release(handle); }
  // hvd.start_timeline / stop_timeline; throw when not initialized.
  void start_timeline(const std::string& path, bool mark_cycles);
  void stop_timeline();

 private:
  Session& session() const;  // requires mutex_ held
  // Waits (without the lock) for a handle whose output is one int64, and returns it.
  int64_t wait_for_number(HandleId handle);

  mutable std::mutex mutex_;
  Logger logger_;
  Config config_;
  HandleTable handles_;
  // Rank 0's rendezvous store when the job was started by mpirun without kolorun (outlives the
  // session: declared before it).
  std::unique_ptr<rendezvous::TcpStoreServer> mpi_store_server_;
  std::unique_ptr<Session> session_;
  uint64_t rounds_ = 0;  // init() calls so far; names rendezvous keys of each round
};

// The one Runtime of this process.
Runtime& runtime();

}  // namespace kolo::core
