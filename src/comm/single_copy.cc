#include "comm/single_copy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <numeric>
#include <vector>

#include "base/copy_bytes.h"
#include "base/errors.h"
#include "comm/arena_wait.h"

namespace kolo::comm::detail {

namespace {

using transport::SharedArena;

PeerBlock block_of(const SharedArena& arena, int slot, int half, size_t at) {
  PeerBlock block{};
  std::memcpy(&block, arena.slot(slot, half) + at, sizeof(block));
  return block;
}

// Probe rounds: each member publishes the address of a word, reads its successor's and writes
// it back (a broadcast's root writes into its receivers), and then tells the others whether that
// worked.
constexpr uint64_t kProbeWord = 0x6b6f6c6f2d636d61;  // "kolo-cma"

}  // namespace

void publish_block(CollectiveArena& collective, int half, size_t at, const void* address,
                   size_t bytes) {
  const PeerBlock block{collective.host.arena->process_id(), reinterpret_cast<uint64_t>(address),
                        bytes};
  std::memcpy(collective.host.arena->slot(collective.host.slot, half) + at, &block, sizeof(block));
}

namespace {

// Reads [offset, offset + bytes) of `block` (published by `peer`) into `into`, or with `write`
// writes `into` there.
void move_range(Communicator& comm, CollectiveArena& collective, int peer, const PeerBlock& block,
                size_t offset, std::byte* into, size_t bytes, bool write = false) {
  size_t done = 0;
  while (done < bytes) {
    const SharedArena& arena = *collective.host.arena;
    const uint64_t at = block.address + offset + done;
    const long got = write ? arena.write_member_memory(block.pid, at, into + done, bytes - done)
                           : arena.read_member_memory(block.pid, at, into + done, bytes - done);
    if (got > 0) {
      done += static_cast<size_t>(got);
      continue;
    }
    const int error = got < 0 ? errno : EFAULT;
    if (error == EINTR) continue;
    const int laggard[] = {peer};
    comm.check_alive(laggard);  // a peer that died meanwhile is reported as such
    // A killed process loses its memory before its sockets close: the peer died, and is named as
    // a lost peer (so the root cause is looked up, and this rank does not exit before the launcher
    // has seen the death: kolorun would report this messenger as the job's first failure).
    if (error == ESRCH) {
      throw PeerError(peer, fmt::format("{} (pid {}) exited or was killed while rank {} was {} its "
                                        "memory (process_vm_{}v: no such process)",
                                        comm.peer(peer).peer_description(), block.pid, comm.rank(),
                                        write ? "writing" : "reading", write ? "write" : "read"));
    }
    throw SystemError(fmt::format("rank {}: {} the block of {} (pid {}) {} its memory", comm.rank(),
                                  write ? "writing" : "reading", comm.peer(peer).peer_description(),
                                  block.pid, write ? "in" : "from"),
                      error, write ? "process_vm_writev" : "process_vm_readv");
  }
}

}  // namespace

void read_block(Communicator& comm, CollectiveArena& collective, int peer, int half, size_t at,
                std::byte* into, size_t bytes) {
  const PeerBlock block = block_of(*collective.host.arena, peer, half, at);
  if (block.bytes != bytes) {
    throw ProtocolError(
        fmt::format("rank {}: {} published a block of {} bytes for a single-copy "
                    "step that expects {}",
                    comm.rank(), comm.peer(peer).peer_description(), block.bytes, bytes));
  }
  move_range(comm, collective, peer, block, 0, into, bytes);
}

namespace {
PeerBlock block_holding(Communicator& comm, CollectiveArena& collective, int peer, int half,
                        size_t at, size_t offset, size_t bytes, const char* what) {
  const PeerBlock block = block_of(*collective.host.arena, peer, half, at);
  if (offset > block.bytes || bytes > block.bytes - offset) {
    throw ProtocolError(
        fmt::format("rank {}: {} published a block of {} bytes for a single-copy "
                    "step that {} bytes {} to {} of it",
                    comm.rank(), comm.peer(peer).peer_description(), block.bytes, what, offset,
                    offset + bytes));
  }
  return block;
}
}  // namespace

void read_block_range(Communicator& comm, CollectiveArena& collective, int peer, int half,
                      size_t at, size_t offset, std::byte* into, size_t bytes) {
  const PeerBlock block = block_holding(comm, collective, peer, half, at, offset, bytes, "reads");
  move_range(comm, collective, peer, block, offset, into, bytes);
}

void write_block_range(Communicator& comm, CollectiveArena& collective, int peer, int half,
                       size_t at, size_t offset, const std::byte* from, size_t bytes) {
  const PeerBlock block = block_holding(comm, collective, peer, half, at, offset, bytes, "writes");
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): only read, as process_vm_writev's iovec
  move_range(comm, collective, peer, block, offset, const_cast<std::byte*>(from), bytes, true);
}

void finish_step_reads(Communicator& comm, CollectiveArena& collective, uint64_t step,
                       const std::function<void()>& meanwhile) {
  collective.host.arena->post(collective.host.slot, SharedArena::Flag::reduced, step + 1);
  if (meanwhile) meanwhile();
  wait_for_members(comm, collective, SharedArena::Flag::reduced, step + 1);
}

void take_as_posted(Communicator& comm, CollectiveArena& collective, uint64_t step,
                    const std::function<void()>& meanwhile, const std::function<void(int)>& take) {
  SharedArena& arena = *collective.host.arena;
  const int self = collective.host.slot;
  const int n = arena.ranks();
  arena.post(self, SharedArena::Flag::ready, step + 1);
  bool waited = false;
  for (int k = 1; k < n; ++k) {
    const int member = (self + k) % n;
    if (arena.flag(member, SharedArena::Flag::ready) <= step) {
      if (!waited && meanwhile) meanwhile();
      waited = true;
      wait_for_members(comm, collective, SharedArena::Flag::ready, step + 1, member);
    }
    take(member);
  }
  collective.synced = step + 1;  // every member posted, as after finish_step_writes
}

bool oversubscribed_single_copy(Communicator& comm, size_t bytes) {
  // Measured at np 3 on 2 cores against the links' algorithms: allreduce 256 KiB 0.88x, 1 MiB
  // 1.07x, 4 MiB 1.53x; broadcast 256 KiB 0.92-1.16x, 1 MiB 1.08-1.26x (docs/PERFORMANCE.md).
  constexpr size_t kMinBytes = size_t{1} << 20;
  return comm.oversubscribed() && bytes >= kMinBytes && arena_serves(comm, bytes, SIZE_MAX) &&
         single_copy_usable(comm, *comm.arena());
}

bool single_copy_pays(std::span<const uint64_t> read_ns, std::span<const uint64_t> copies_ns) {
  const uint64_t reads = std::accumulate(read_ns.begin(), read_ns.end(), uint64_t{0});
  const uint64_t copies = std::accumulate(copies_ns.begin(), copies_ns.end(), uint64_t{0});
  return reads <= copies;
}

namespace {

// What one member found in the probe, in its slot half of the second round.
struct ProbeVerdict {
  uint64_t works;
  uint64_t read_ns;    // best of kTimedRuns reads of the successor's timed block (0: not timed)
  uint64_t copies_ns;  // best of kTimedRuns pairs of copies of as many bytes (0: not timed)
};
constexpr int kTimedRuns = 3;

template <typename Work>
uint64_t best_ns(Work&& work) {
  uint64_t best = UINT64_MAX;
  for (int run = 0; run < kTimedRuns; ++run) {
    const auto start = std::chrono::steady_clock::now();
    if (!work()) return UINT64_MAX;
    const auto took = std::chrono::steady_clock::now() - start;
    best = std::min<uint64_t>(
        best,
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()));
  }
  return best;
}

}  // namespace

bool single_copy_usable(Communicator& comm, CollectiveArena& collective) {
  using State = CollectiveArena::SingleCopy;
  if (collective.single_copy != State::unknown) return collective.single_copy == State::usable;
  SharedArena& arena = *collective.host.arena;
  const int self = collective.host.slot;
  const int n = arena.ranks();
  static uint64_t probe = kProbeWord;  // written back unchanged by the predecessor
  // The block this member's predecessor times its reads on (empty: this member does not
  // measure, and its predecessor then times nothing); freed after the second round, when every
  // member is done reading.
  std::vector<std::byte> timed;
  if (collective.single_copy_allowed && collective.single_copy_measured) {
    timed.assign(kSingleCopyTimedBytes, std::byte{1});
  }

  // Round 1: where each member's probe word and timed block are; each reads its successor's.
  const uint64_t first = collective.steps++;
  const int first_half = static_cast<int>(first % 2);
  before_writing(comm, collective, first);
  publish_block(collective, first_half, 0, &probe, sizeof(probe));
  publish_block(collective, first_half, sizeof(PeerBlock), timed.data(), timed.size());
  finish_step_writes(comm, collective, first);
  ProbeVerdict mine{collective.single_copy_allowed ? 1u : 0u, 0, 0};
  const int next = (self + 1) % n;
  if (mine.works != 0) {
    const PeerBlock block = block_of(arena, next, first_half, 0);
    uint64_t seen = 0;
    const long got = arena.read_member_memory(block.pid, block.address,
                                              reinterpret_cast<std::byte*>(&seen), sizeof(seen));
    mine.works = got == static_cast<long>(sizeof(seen)) && seen == kProbeWord &&
                 arena.write_member_memory(block.pid, block.address,
                                           reinterpret_cast<const std::byte*>(&seen),
                                           sizeof(seen)) == static_cast<long>(sizeof(seen));
  }
  const PeerBlock theirs = block_of(arena, next, first_half, sizeof(PeerBlock));
  if (mine.works != 0 && !timed.empty() && theirs.bytes == timed.size()) {
    // A read of the successor's block into a buffer of this rank, against what the arena does
    // instead: a copy into the slot (here: a scratch buffer) and one out of it.
    std::vector<std::byte> into(timed.size()), scratch(timed.size());
    mine.read_ns = best_ns([&] {
      return arena.read_member_memory(theirs.pid, theirs.address, into.data(), into.size()) ==
             static_cast<long>(into.size());
    });
    mine.copies_ns = best_ns([&] {
      copy_bytes(scratch.data(), timed.data(), timed.size());
      copy_bytes(into.data(), scratch.data(), scratch.size());
      return true;
    });
    if (mine.read_ns == UINT64_MAX) mine.works = 0;  // a short read: as if it could not
  }
  // Round 2: what each member found (every member then knows, and decides alike).
  const uint64_t second = collective.steps++;
  const int half = static_cast<int>(second % 2);
  before_writing(comm, collective, second);
  std::memcpy(arena.slot(self, half), &mine, sizeof(mine));
  finish_step_writes(comm, collective, second);
  bool everywhere = true;
  std::vector<uint64_t> read_ns, copies_ns;
  for (int r = 0; r < n; ++r) {
    ProbeVerdict found{};
    std::memcpy(&found, arena.slot(r, half), sizeof(found));
    everywhere = everywhere && found.works != 0;
    read_ns.push_back(found.read_ns);
    copies_ns.push_back(found.copies_ns);
  }
  collective.single_copy = everywhere ? State::usable : State::unusable;
  collective.single_copy_reads_pay = everywhere && single_copy_pays(read_ns, copies_ns);
  return everywhere;
}

size_t single_copy_blocks_from(Communicator& comm, CollectiveArena& collective) {
  if (!single_copy_usable(comm, collective)) return SIZE_MAX;
  return collective.single_copy_reads_pay ? kSingleCopyMinBytes : kSingleCopyDramBytes;
}

}  // namespace kolo::comm::detail
