#include "core/runtime.h"

#include <algorithm>
#include <cstring>

#include "base/errors.h"
#include "bootstrap/mpi_bootstrap.h"
#include "core/launcher_watch.h"

namespace kolo::core {

Runtime::~Runtime() {
  // A process that exits without shutdown() must not leave a thread running over freed state.
  try {
    shutdown();
  } catch (...) {  // destructors must not throw; the process is going away
  }
}

void Runtime::init() {
  std::lock_guard lock(mutex_);
  if (session_) return;
  config_ = Config::from_process_env();
  end_with_launcher(process_env_lookup());
  bootstrap::LaunchInfo launch = bootstrap::LaunchInfo::from_env(process_env_lookup());
  logger_.set_level(config_.log_level);
  logger_.set_timestamps(config_.log_timestamps);
  logger_.set_prefix(fmt::format("[kolo rank {}/{}]", launch.rank, launch.size));
  for (const auto& name : config_.unknown_variables) {
    logger_.warn("{} is not a kolo setting (typo?); it is ignored", name);
  }
  if (launch.rendezvous_over_mpi)
    mpi_store_server_ = bootstrap::exchange_rendezvous_over_mpi(launch, logger_);
  session_ = std::make_unique<Session>(config_, launch, rounds_++, handles_, logger_);
  if (launch.launcher_local_rank >= 0 &&
      launch.launcher_local_rank != session_->world().local_rank) {
    logger_.warn(
        "the launcher's local rank {} differs from kolo's {} (ranks of one host are "
        "numbered by rank order)",
        launch.launcher_local_rank, session_->world().local_rank);
  }
  logger_.debug("initialized: local rank {}/{}, cross rank {}/{}", session_->world().local_rank,
                session_->world().local_size, session_->world().cross_rank,
                session_->world().cross_size);
}

void Runtime::shutdown() {
  std::unique_ptr<Session> ending;
  {
    std::lock_guard lock(mutex_);
    ending = std::move(session_);
  }
  // Joined outside the lock: the final cycle may wait on peers for a while.
  if (ending) ending->shutdown();
}

bool Runtime::initialized() const {
  std::lock_guard lock(mutex_);
  return session_ != nullptr;
}

Session& Runtime::session() const {
  if (!session_) {
    throw Error("kolo is not initialized: call hvd.init() (kolo.init()) before using it");
  }
  return *session_;
}

bootstrap::WorldInfo Runtime::world() const {
  std::lock_guard lock(mutex_);
  return session().world();
}

SessionStats Runtime::stats() const {
  std::lock_guard lock(mutex_);
  return session().stats();
}

Config Runtime::config() const {
  std::lock_guard lock(mutex_);
  return config_;
}

HandleId Runtime::enqueue(TensorEntry entry) {
  std::lock_guard lock(mutex_);
  return session().enqueue(std::move(entry));
}

int64_t Runtime::wait_for_number(HandleId handle) {
  try {
    handles_.wait(handle);
  } catch (const Error&) {
    (void)handles_.release(handle);
    throw;
  }
  OwnedBuffer out = handles_.release(handle);
  int64_t value = 0;
  if (!out.data || out.bytes != sizeof value) {
    throw Error("internal error: a process-set or join handle completed without its result");
  }
  std::memcpy(&value, out.data.get(), sizeof value);
  return value;
}

int32_t Runtime::add_process_set(std::vector<int> ranks, bool during_init) {
  HandleId handle = 0;
  {
    std::lock_guard lock(mutex_);
    Session& current = session();
    if (!during_init && !config_.dynamic_process_sets) {
      throw InvalidArgument(
          "Set HOROVOD_DYNAMIC_PROCESS_SETS=1 (or KOLO_DYNAMIC_PROCESS_SETS=1, or "
          "hvd.init(process_sets=\"dynamic\")) to allow adding process sets after initialization");
    }
    handle = current.request_add_process_set(std::move(ranks));
  }
  return static_cast<int32_t>(wait_for_number(handle));
}

bool Runtime::remove_process_set(int32_t id) {
  HandleId handle = 0;
  {
    std::lock_guard lock(mutex_);
    Session& current = session();
    if (!config_.dynamic_process_sets) {
      throw InvalidArgument(
          "Set HOROVOD_DYNAMIC_PROCESS_SETS=1 (or KOLO_DYNAMIC_PROCESS_SETS=1, or "
          "hvd.init(process_sets=\"dynamic\")) to allow removing process sets after "
          "initialization");
    }
    const auto ids = current.process_set_ids();
    if (id == kGlobalProcessSet || std::find(ids.begin(), ids.end(), id) == ids.end()) {
      return false;  // the same answer on every rank: registries change only by agreed cycles
    }
    handle = current.request_remove_process_set(id);
  }
  return wait_for_number(handle) != 0;
}

std::vector<int> Runtime::process_set_ranks(int32_t id) const {
  std::lock_guard lock(mutex_);
  return session().process_set_ranks(id);
}

std::vector<int32_t> Runtime::process_set_ids() const {
  std::lock_guard lock(mutex_);
  return session().process_set_ids();
}

int Runtime::join() {
  HandleId handle = 0;
  {
    std::lock_guard lock(mutex_);
    handle = session().request_join();
  }
  return static_cast<int>(wait_for_number(handle));
}

void Runtime::start_timeline(const std::string& path, bool mark_cycles) {
  std::lock_guard lock(mutex_);
  session().start_timeline(path, mark_cycles);
}

void Runtime::stop_timeline() {
  std::lock_guard lock(mutex_);
  session().stop_timeline();
}

Runtime& runtime() {
  static Runtime instance;
  return instance;
}

}  // namespace kolo::core
