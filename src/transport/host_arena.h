// The second transport seam, beside link.h: the memory that every rank of one host maps, in which
// each rank owns a slot that the others read directly, plus per-rank sequence flags to post and
// wait on. comm/ runs the host's collectives on it (comm/allreduce_shared_memory.cc) without
// knowing how it is made; transport/shm/arena.h is the one implementation (a POSIX shared-memory
// object and a futex), set up at bootstrap (transport/shm/arena_setup.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace kolo::transport {

class SharedArena {
 public:
  // The flags each rank posts: `ready` after copying a step's data into its slot, `reduced`
  // after folding its slice of a step. Both count steps (step s posts s + 1).
  enum class Flag { ready, reduced };

  virtual ~SharedArena() = default;

  [[nodiscard]] virtual int ranks() const = 0;
  [[nodiscard]] virtual size_t chunk_bytes() const = 0;
  // Slot half `half` (0 or 1) of rank `slot`: chunk_bytes() bytes, page aligned.
  [[nodiscard]] virtual std::byte* slot(int slot, int half) const = 0;
  [[nodiscard]] virtual uint64_t flag(int slot, Flag which) const = 0;

  // Sets this rank's flag (seq_cst) and wakes sleeping ranks, if any.
  virtual void post(int slot, Flag which, uint64_t value) = 0;

  // Sleeping protocol for a waiter: begin_sleep() registers it and returns a ticket; the waiter
  // then rechecks its condition and, only if still unmet, sleep()s until a post() after
  // begin_sleep() or `timeout`; end_sleep() always follows begin_sleep().
  virtual uint32_t begin_sleep() = 0;
  virtual void sleep(uint32_t ticket, std::chrono::microseconds timeout) = 0;
  virtual void end_sleep() = 0;

  // Reading a member's memory directly, one copy instead of two through the slots
  // (comm/single_copy.h): this process's id as members name it, and the bytes read from
  // `address` in the member process `process` (-1 with errno when the system refuses); writing
  // likewise (a broadcast's root writes part of its receivers' buffers while they read the rest).
  [[nodiscard]] virtual uint64_t process_id() const = 0;
  virtual long read_member_memory(uint64_t process, uint64_t address, std::byte* into,
                                  size_t bytes) const = 0;
  virtual long write_member_memory(uint64_t process, uint64_t address, const std::byte* from,
                                   size_t bytes) const = 0;

 protected:
  SharedArena() = default;
  SharedArena(const SharedArena&) = default;
  SharedArena(SharedArena&&) = default;
  SharedArena& operator=(const SharedArena&) = default;
  SharedArena& operator=(SharedArena&&) = default;
};

// One host's arena as one of its ranks holds it.
struct HostArena {
  std::unique_ptr<SharedArena> arena;
  int slot = 0;              // this rank's index among the host's ranks
  std::vector<int> members;  // the host's ranks (world numbering), in slot order
};

}  // namespace kolo::transport
