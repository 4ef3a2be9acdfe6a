#include "comm/arena_wait.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/errors.h"
#include "comm/collectives.h"
#include "comm/cpu_relax.h"
#include "comm/link_watch.h"
#include "comm/patient_waits.h"

namespace kolo::comm::detail {

namespace {

using transport::SharedArena;

// Naps grow from the first to the longest: short ones while the peer is likely busy with the same
// step, longer ones for a peer that went off to compute; a hang-up is still seen within the
// longest nap.
constexpr auto kFirstNap = std::chrono::microseconds(100);
constexpr auto kLongestNap = std::chrono::microseconds(10000);

// The first member at or after `from` (slot order, skipping `self`) whose flag is below target,
// or -1 if none. Starting at the last laggard avoids rereading the lines already seen. With
// only >= 0, that member alone.
int first_behind(const SharedArena& arena, int self, SharedArena::Flag which, uint64_t target,
                 int from, int only) {
  if (only >= 0) return arena.flag(only, which) < target ? only : -1;
  const int n = arena.ranks();
  for (int i = 0; i < n; ++i) {
    const int slot = (from + i) % n;
    if (slot != self && arena.flag(slot, which) < target) return slot;
  }
  return -1;
}

}  // namespace

void wait_for_members(Communicator& comm, CollectiveArena& collective, SharedArena::Flag which,
                      uint64_t target, int only) {
  const SharedArena& arena = *collective.host.arena;
  const int self = collective.host.slot;
  int behind = first_behind(arena, self, which, target, 0, only);
  if (behind < 0) return;

  const auto start = Clock::now();
  const std::chrono::nanoseconds longest_spin = comm.options().spin_before_poll;
  // A driving caller spins past a wake-up's latency and leaves the background thread's learned
  // spin alone (comm/patient_waits.h).
  const bool patient = PatientWaits::active() && !comm.oversubscribed();
  const std::chrono::nanoseconds spin = patient ? std::chrono::nanoseconds(PatientWaits::kSpin)
                                                : collective.spin.current(longest_spin);
  // Spin (pause) on a core of our own; oversubscribed, yield at once: the rank we wait for may
  // need this very core to post.
  for (unsigned pass = 0;; ++pass) {
    if (comm.oversubscribed()) {
      ::sched_yield();
    } else {
      cpu_relax();
    }
    behind = first_behind(arena, self, which, target, behind, only);
    if (behind < 0) {
      if (!patient) collective.spin.record(Clock::now() - start, longest_spin);
      return;
    }
    if (pass % 64 == 63 && Clock::now() - start >= spin) break;
  }

  SharedArena& sleeper = *collective.host.arena;
  auto nap = kFirstNap;
  std::vector<int> laggards;
  for (;;) {
    const uint32_t ticket = sleeper.begin_sleep();
    behind = first_behind(arena, self, which, target, behind, only);
    if (behind >= 0) sleeper.sleep(ticket, nap);
    sleeper.end_sleep();
    behind = first_behind(arena, self, which, target, std::max(behind, 0), only);
    if (behind < 0) {
      if (!patient) collective.spin.record(Clock::now() - start, longest_spin);
      return;
    }
    // Slot numbers are this communicator's ranks (it uses the arena only then).
    laggards.clear();
    for (int slot = 0; slot < arena.ranks(); ++slot) {
      if (slot != self && (only < 0 || slot == only) && arena.flag(slot, which) < target) {
        laggards.push_back(slot);
      }
    }
    comm.check_alive(laggards);
    const auto timeout = comm.options().peer_timeout;
    if (Clock::now() - start >= timeout) {
      const Link& link = comm.peer(behind);
      throw PeerError(link.peer_rank(),
                      fmt::format("no progress from {} for {} (waiting for it in a shared-memory "
                                  "collective)",
                                  link.peer_description(), format_duration(timeout)),
                      PeerError::Kind::silent);
    }
    nap = std::min(nap * 2, std::chrono::duration_cast<std::chrono::microseconds>(kLongestNap));
  }
}

CollectiveArena& required_arena(Communicator& comm, const char* collective) {
  CollectiveArena* const arena = comm.arena();
  if (arena == nullptr) {
    throw InvalidArgument(fmt::format(
        "rank {}: {} needs every rank of the group on this host's shared-memory arena (none was "
        "set up, or the group is not exactly the host's ranks)",
        comm.rank(), collective));
  }
  return *arena;
}

void before_writing(Communicator& comm, CollectiveArena& arena, uint64_t step) {
  if (arena.synced >= step) return;
  wait_for_members(comm, arena, SharedArena::Flag::ready, step);
  arena.synced = step;
}

void finish_step_writes(Communicator& comm, CollectiveArena& arena, uint64_t step) {
  arena.host.arena->post(arena.host.slot, SharedArena::Flag::ready, step + 1);
  wait_for_members(comm, arena, SharedArena::Flag::ready, step + 1);
  arena.synced = step + 1;
}

bool arena_serves(const Communicator& comm, size_t bytes, size_t oversubscribed_limit) {
  const CollectiveArena* const arena = comm.arena();
  return arena != nullptr && bytes <= arena->max_bytes &&
         (!comm.oversubscribed() || bytes < oversubscribed_limit);
}

}  // namespace kolo::comm::detail

namespace kolo::comm {

bool arena_member_started_next_step(const Communicator& comm) {
  const CollectiveArena* const collective = comm.arena();
  if (collective == nullptr) return false;
  const transport::SharedArena& arena = *collective->host.arena;
  // Step s posts ready = s + 1, and every member has run the same `steps` before this one.
  for (int slot = 0; slot < arena.ranks(); ++slot) {
    if (slot != collective->host.slot &&
        arena.flag(slot, transport::SharedArena::Flag::ready) > collective->steps) {
      return true;
    }
  }
  return false;
}

}  // namespace kolo::comm
