// The host's collective arena: one shared-memory object mapped by every rank of a host, in which
// each rank owns a slot (two halves, used alternately by successive steps) that the others read
// directly, plus per-rank sequence flags. comm/allreduce_shared_memory.cc runs the collectives;
// this file only knows the layout and how to sleep on and wake the flags (a futex on a shared
// word, so a waiting rank leaves its core to the others).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "transport/host_arena.h"
#include "transport/shm/mapping.h"

namespace kolo::transport::shm {

class Arena final : public SharedArena {
 public:
  // Creates and initialises `name` for `ranks` slots of 2 x `chunk_bytes` (a multiple of 4096).
  // nullopt + `why` when /dev/shm has no room; throws SystemError otherwise.
  static std::optional<Arena> create(const std::string& name, int ranks, size_t chunk_bytes,
                                     std::string& why);
  // Maps the arena a peer created; throws SystemError / ProtocolError on a mismatch.
  static Arena open(const std::string& name, int ranks, size_t chunk_bytes);
  static size_t bytes_needed(int ranks, size_t chunk_bytes);

  [[nodiscard]] int ranks() const override { return ranks_; }
  [[nodiscard]] size_t chunk_bytes() const override { return chunk_bytes_; }
  [[nodiscard]] std::byte* slot(int slot, int half) const override;
  [[nodiscard]] uint64_t flag(int slot, Flag which) const override;
  void post(int slot, Flag which, uint64_t value) override;
  uint32_t begin_sleep() override;
  void sleep(uint32_t ticket, std::chrono::microseconds timeout) override;
  void end_sleep() override;
  [[nodiscard]] uint64_t process_id() const override;
  long read_member_memory(uint64_t process, uint64_t address, std::byte* into,
                          size_t bytes) const override;
  long write_member_memory(uint64_t process, uint64_t address, const std::byte* from,
                           size_t bytes) const override;

 private:
  Arena(Mapping mapping, int ranks, size_t chunk_bytes)
      : mapping_(std::move(mapping)), ranks_(ranks), chunk_bytes_(chunk_bytes) {}

  [[nodiscard]] std::atomic<uint64_t>& flag_word(int slot, Flag which) const;

  Mapping mapping_;
  int ranks_;
  size_t chunk_bytes_;
};

// "/kolo-<job tag>-<round>-arena-<lowest rank of the host>".
std::string arena_name(const std::string& job_tag, uint64_t round, int leader);

}  // namespace kolo::transport::shm
