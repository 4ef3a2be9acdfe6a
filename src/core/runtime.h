// core::Runtime: the only process-wide object in kolo. It owns the handle table (which outlives
// sessions, so a handle from before a shutdown still reports its failure), the logger, and the
// current Session. init() after shutdown() starts a new session (elastic training needs it).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "base/clock.h"
#include "base/logger.h"
#include "core/config.h"
#include "core/handle_table.h"
#include "core/session.h"
#include "rendezvous/tcp_store.h"

namespace kolo::core {

// What the program itself passed to init() (hvd.init(process_sets="dynamic")). Each value given
// wins over the environment's setting of the same name; an empty one leaves that setting to the
// environment (KOLO_ over HOROVOD_ over the default).
struct InitOptions {
  std::optional<bool> dynamic_process_sets;  // DYNAMIC_PROCESS_SETS
};

class Runtime {
 public:
  Runtime() = default;
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Reads the configuration and launch information from the environment, lets `options` override
  // it, and joins the job. A second init() while initialized does nothing (as Horovod).
  void init(const InitOptions& options = {});
  void shutdown();
  [[nodiscard]] bool initialized() const;
  // Session::callers_drive (false before init).
  [[nodiscard]] bool callers_drive() const;

  // Throws kolo::Error("kolo is not initialized ...") when not initialized.
  [[nodiscard]] bootstrap::WorldInfo world() const;
  [[nodiscard]] SessionStats stats() const;
  [[nodiscard]] RankPlacement placement() const;
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
  // join() in two halves, for a caller that waits on the handle itself (the Python layer, which
  // lets Ctrl-C through): the request, then the result of its completed handle (released here;
  // throws the failure of a failed one).
  HandleId request_join(int device = -1);
  int64_t take_number(HandleId handle);
  // A handle submitted with caller_drives that is polled, not waited for, is handed to the
  // background thread (nobody else would run its cycles soon).
  [[nodiscard]] bool poll(HandleId handle);
  [[nodiscard]] bool succeeded(HandleId handle) const { return handles_.succeeded(handle); }
  // A caller's wait made of wait_for() slices counts as waiting between them too
  // (HandleTable::begin_caller_wait).
  void begin_caller_wait() { handles_.begin_caller_wait(); }
  void end_caller_wait() { handles_.end_caller_wait(); }
  void wait(HandleId handle) const { handles_.wait(handle); }
  // wait() for at most `timeout`; false if still pending (the Python layer checks for Ctrl-C
  // between slices). A handle submitted with caller_drives is driven by this thread
  // (Session::drive) instead of waited for.
  bool wait_for(HandleId handle, std::chrono::milliseconds timeout);
  OwnedBuffer release(HandleId handle) { return handles_.release(handle); }
  bool release_if_done(HandleId handle) { return handles_.release_if_done(handle); }
  // Elastic training (KOLO_ELASTIC=1, core/elastic_join.h). The membership round the current
  // session belongs to (0: not elastic, or not initialized).
  [[nodiscard]] int64_t elastic_round() const;
  // kolorun's host-change notice: (stamp, "added"|"removed"|"mixed"); (0, "") when none yet.
  // Throws when this process is not an elastic worker.
  [[nodiscard]] std::pair<int64_t, std::string> elastic_hosts_updated();
  // Rank 0 records how many commits it made (kolorun names it when a worker is lost).
  void elastic_commit(int64_t commits);

  // hvd.start_timeline / stop_timeline; throw when not initialized.
  void start_timeline(const std::string& path, bool mark_cycles);
  void stop_timeline();

 private:
  Session& session() const;  // requires mutex_ held
  // The session (or null), held beyond the lock: a shutdown() meanwhile cannot free it.
  std::shared_ptr<Session> shared_session() const;
  // Waits (without the lock) for a handle whose output is one int64, and returns it.
  int64_t wait_for_number(HandleId handle);

  mutable std::mutex mutex_;
  Logger logger_;
  Config config_;
  HandleTable handles_;
  // Rank 0's rendezvous store when the job was started by mpirun without kolorun (outlives the
  // session: declared before it).
  std::unique_ptr<rendezvous::TcpStoreServer> mpi_store_server_;
  std::shared_ptr<Session> session_;
  // Elastic: when this process first joined a round; the timeline's zero in every round.
  std::optional<Clock::time_point> timeline_zero_;
  uint64_t rounds_ = 0;  // init() calls so far; names rendezvous keys of each round
  // Elastic: a store client kept across sessions (for the launcher's keys), the round of the
  // current session and the last round this process was given a place in.
  rendezvous::Store& elastic_store(const bootstrap::LaunchInfo& launch);  // requires mutex_ held
  std::unique_ptr<rendezvous::Store> elastic_store_;
  mutable std::mutex elastic_mutex_;  // elastic_store_ between init() and the bindings
  int64_t elastic_round_ = 0;
  int64_t last_elastic_round_ = 0;
};

// The one Runtime of this process.
Runtime& runtime();

}  // namespace kolo::core
