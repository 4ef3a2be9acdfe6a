#include "core/runtime.h"

#include <algorithm>
#include <cstring>

#include "base/errors.h"
#include "bootstrap/mpi_bootstrap.h"
#include "core/elastic_join.h"
#include "core/launcher_watch.h"
#include "rendezvous/elastic_keys.h"

namespace kolo::core {

namespace {

// The program's own choices win over the environment; `sources` then names init() as their
// origin.
void apply(const InitOptions& options, Config& config) {
  if (options.dynamic_process_sets) {
    config.dynamic_process_sets = *options.dynamic_process_sets;
    std::erase_if(config.sources,
                  [](const auto& source) { return source.first == "DYNAMIC_PROCESS_SETS"; });
    config.sources.emplace_back("DYNAMIC_PROCESS_SETS", "init()");
  }
}

}  // namespace

Runtime::~Runtime() {
  // A process that exits without shutdown() must not leave a thread running over freed state.
  try {
    shutdown();
  } catch (...) {  // destructors must not throw; the process is going away
  }
}

void Runtime::init(const InitOptions& options) {
  std::lock_guard lock(mutex_);
  if (session_) return;
  elastic_round_ = 0;
  config_ = Config::from_process_env();
  apply(options, config_);
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
  uint64_t round = rounds_++;
  if (auto identity = ElasticIdentity::from_env(process_env_lookup(), config_.start_timeout)) {
    // kolorun's round decides rank and size; KOLO_RANK/KOLO_SIZE were only the first guess.
    rendezvous::Store& store = elastic_store(launch);
    const int64_t next = std::max(identity->first_round, last_elastic_round_ + 1);
    const std::string host = launch.hostname.empty() ? "?" : launch.hostname;
    ElasticSeat seat;
    {
      std::lock_guard elastic(elastic_mutex_);
      seat = join_elastic_round(store, *identity, next, host);
    }
    last_elastic_round_ = seat.round;
    launch.rank = seat.rank;
    launch.size = seat.size;
    round = static_cast<uint64_t>(seat.round);
    // One timeline for the whole elastic job: later rounds continue the file, on one clock.
    if (!timeline_zero_) timeline_zero_ = Clock::now();
    config_.timeline_continue = seat.round > 1;
    config_.timeline_zero = timeline_zero_;
    launch.failure_key = rendezvous::elastic_failure_key(seat.round);
    launch.abandon_check =
        superseded_check(std::make_unique<rendezvous::TcpStore>(
                             transport::Endpoint{launch.rendezvous_addr, launch.rendezvous_port},
                             transport::Secret::from_hex(launch.secret_hex), config_.start_timeout),
                         seat.round);
    logger_.set_prefix(fmt::format("[kolo rank {}/{}]", launch.rank, launch.size));
    logger_.info("elastic worker {} joins round {} as rank {} of {}", identity->worker_id,
                 seat.round, seat.rank, seat.size);
  }
  session_ = std::make_shared<Session>(config_, launch, round, handles_, logger_);
  elastic_round_ = last_elastic_round_ > 0 ? static_cast<int64_t>(round) : 0;
  if (elastic_round_ > 0) {
    session_->mark_timeline(
        fmt::format("ELASTIC_RESET round {}, size {}", elastic_round_, session_->world().size));
  }
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

rendezvous::Store& Runtime::elastic_store(const bootstrap::LaunchInfo& launch) {
  std::lock_guard elastic(elastic_mutex_);
  if (!elastic_store_) {
    if (launch.rendezvous_addr.empty() || launch.secret_hex.empty()) {
      throw InvalidArgument(
          "KOLO_ELASTIC=1 without a rendezvous address and secret: elastic workers must be "
          "started by kolorun");
    }
    elastic_store_ = std::make_unique<rendezvous::TcpStore>(
        transport::Endpoint{launch.rendezvous_addr, launch.rendezvous_port},
        transport::Secret::from_hex(launch.secret_hex), config_.start_timeout);
  }
  return *elastic_store_;
}

int64_t Runtime::elastic_round() const {
  std::lock_guard lock(mutex_);
  return session_ ? elastic_round_ : 0;
}

std::pair<int64_t, std::string> Runtime::elastic_hosts_updated() {
  std::lock_guard elastic(elastic_mutex_);
  if (!elastic_store_) {
    throw Error(
        "elastic_hosts_updated: this process is not an elastic worker (start it with "
        "kolorun --min-np/--max-np/--host-discovery-script, then init())");
  }
  std::string text;
  try {
    text = elastic_store_->get(std::string(rendezvous::kElasticHostsUpdatedKey), Duration::zero());
  } catch (const TimeoutError&) {
    return {0, ""};
  }
  const auto space = text.find(' ');
  return {std::stoll(text.substr(0, space)),
          space == std::string::npos ? "" : text.substr(space + 1)};
}

void Runtime::elastic_commit(int64_t commits) {
  std::lock_guard elastic(elastic_mutex_);
  if (!elastic_store_) return;  // not elastic: nothing to tell
  elastic_store_->set(std::string(rendezvous::kElasticCommitKey), std::to_string(commits));
}

void Runtime::shutdown() {
  std::shared_ptr<Session> ending;
  {
    std::lock_guard lock(mutex_);
    ending = std::move(session_);
  }
  // Joined outside the lock: the final cycle may wait on peers for a while.
  if (ending) ending->shutdown();
}

bool Runtime::wait_for(HandleId handle, std::chrono::milliseconds timeout) {
  if (handles_.caller_drives(handle)) {
    // Shared: a shutdown() on another thread meanwhile ends the loop, and drive() then waits.
    if (const auto session = shared_session()) return session->drive(handle, timeout);
  }
  return handles_.wait_for(handle, timeout);
}

bool Runtime::poll(HandleId handle) {
  if (handles_.poll(handle)) return true;
  if (handles_.caller_drives(handle)) {
    if (const auto session = shared_session()) session->hand_to_background();
  }
  return false;
}

std::shared_ptr<Session> Runtime::shared_session() const {
  std::lock_guard lock(mutex_);
  return session_;
}

bool Runtime::callers_drive() const {
  const auto session = shared_session();
  return session && session->callers_drive();
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

RankPlacement Runtime::placement() const {
  std::lock_guard lock(mutex_);
  return session().placement();
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
    // take_number() throws it again, once it has released the handle.
  }
  return take_number(handle);
}

int64_t Runtime::take_number(HandleId handle) {
  try {
    handles_.wait(handle);  // done already: rethrows a failure
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

int Runtime::join() { return static_cast<int>(wait_for_number(request_join())); }

HandleId Runtime::request_join(int device) {
  std::lock_guard lock(mutex_);
  return session().request_join(device);
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
