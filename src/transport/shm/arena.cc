#include "transport/shm/arena.h"

#include <fmt/format.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <new>

#include "base/errors.h"
#include "transport/shm/ring.h"

namespace kolo::transport::shm {

namespace {

constexpr uint64_t kMagic = 0x6b6f6c6f6172656eull;  // "koloaren"
constexpr size_t kPage = 4096;

struct ArenaHeader {
  uint64_t magic;
  uint64_t ranks;
  uint64_t chunk_bytes;
};

// One cache line each, so that a rank polling one word does not slow the writer of another.
struct alignas(kCacheLine) Line {
  std::atomic<uint64_t> value{0};
};
struct alignas(kCacheLine) WakeLines {
  alignas(kCacheLine) std::atomic<uint32_t> ticket{0};    // the futex word; post() bumps it
  alignas(kCacheLine) std::atomic<uint32_t> sleepers{0};  // ranks inside begin/end_sleep
};

constexpr size_t kHeaderBytes = kCacheLine;
constexpr size_t kWakeOffset = kHeaderBytes;
constexpr size_t kFlagsOffset = kWakeOffset + sizeof(WakeLines);

size_t flags_bytes(int ranks) { return static_cast<size_t>(ranks) * 2 * sizeof(Line); }
size_t slots_offset(int ranks) {
  return (kFlagsOffset + flags_bytes(ranks) + kPage - 1) / kPage * kPage;
}

WakeLines& wake_lines(const Mapping& mapping) {
  return *std::launder(reinterpret_cast<WakeLines*>(mapping.base() + kWakeOffset));
}

long futex(std::atomic<uint32_t>& word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: the word lives in memory shared between processes.
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), op, value, timeout, nullptr, 0);
}

}  // namespace

size_t Arena::bytes_needed(int ranks, size_t chunk_bytes) {
  return slots_offset(ranks) + static_cast<size_t>(ranks) * 2 * chunk_bytes;
}

std::optional<Arena> Arena::create(const std::string& name, int ranks, size_t chunk_bytes,
                                   std::string& why) {
  if (ranks < 1 || chunk_bytes == 0 || chunk_bytes % kPage != 0) {
    throw InvalidArgument(
        fmt::format("arena of {} ranks x {} bytes: ranks must be positive and "
                    "the chunk a multiple of {}",
                    ranks, chunk_bytes, kPage));
  }
  auto mapping = Mapping::create(name, bytes_needed(ranks, chunk_bytes), why);
  if (!mapping) return std::nullopt;
  std::byte* base = mapping->base();
  new (base + kWakeOffset) WakeLines();
  for (int i = 0; i < ranks * 2; ++i) new (base + kFlagsOffset + i * sizeof(Line)) Line();
  auto* header = reinterpret_cast<ArenaHeader*>(base);
  header->ranks = static_cast<uint64_t>(ranks);
  header->chunk_bytes = chunk_bytes;
  header->magic = kMagic;
  return Arena(std::move(*mapping), ranks, chunk_bytes);
}

Arena Arena::open(const std::string& name, int ranks, size_t chunk_bytes) {
  Mapping mapping = Mapping::open(name, bytes_needed(ranks, chunk_bytes));
  const auto* header = reinterpret_cast<const ArenaHeader*>(mapping.base());
  if (header->magic != kMagic || header->ranks != static_cast<uint64_t>(ranks) ||
      header->chunk_bytes != chunk_bytes) {
    throw ProtocolError(
        fmt::format("shared-memory arena {} is not a kolo arena of {} ranks x {} bytes", name,
                    ranks, chunk_bytes));
  }
  return Arena(std::move(mapping), ranks, chunk_bytes);
}

std::byte* Arena::slot(int slot, int half) const {
  return mapping_.base() + slots_offset(ranks_) +
         (static_cast<size_t>(slot) * 2 + static_cast<size_t>(half)) * chunk_bytes_;
}

std::atomic<uint64_t>& Arena::flag_word(int slot, Flag which) const {
  const size_t index = static_cast<size_t>(slot) * 2 + (which == Flag::ready ? 0 : 1);
  return std::launder(reinterpret_cast<Line*>(mapping_.base() + kFlagsOffset))[index].value;
}

uint64_t Arena::flag(int slot, Flag which) const {
  return flag_word(slot, which).load(std::memory_order_acquire);
}

void Arena::post(int slot, Flag which, uint64_t value) {
  flag_word(slot, which).store(value, std::memory_order_seq_cst);
  // Pairs with begin_sleep(): either the sleeper sees the new flag when it rechecks, or this
  // load sees it registered and the bump below makes its futex wait return.
  WakeLines& wake = wake_lines(mapping_);
  if (wake.sleepers.load(std::memory_order_seq_cst) == 0) return;
  wake.ticket.fetch_add(1, std::memory_order_seq_cst);
  futex(wake.ticket, FUTEX_WAKE, INT_MAX, nullptr);
}

uint32_t Arena::begin_sleep() {
  WakeLines& wake = wake_lines(mapping_);
  wake.sleepers.fetch_add(1, std::memory_order_seq_cst);
  return wake.ticket.load(std::memory_order_seq_cst);
}

void Arena::sleep(uint32_t ticket, std::chrono::microseconds timeout) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const timespec relative{static_cast<time_t>(seconds.count()),
                          static_cast<long>((timeout - seconds).count() * 1000)};
  // EAGAIN (a post came first), EINTR and ETIMEDOUT all mean: look again.
  futex(wake_lines(mapping_).ticket, FUTEX_WAIT, ticket, &relative);
}

void Arena::end_sleep() { wake_lines(mapping_).sleepers.fetch_sub(1, std::memory_order_seq_cst); }

// Linux cross-memory attach: the members are processes of one host, under the same user.
uint64_t Arena::process_id() const { return static_cast<uint64_t>(::getpid()); }

long Arena::read_member_memory(uint64_t process, uint64_t address, std::byte* into,
                               size_t bytes) const {
  iovec local{into, bytes};
  iovec remote{reinterpret_cast<void*>(address), bytes};  // NOLINT(performance-no-int-to-ptr)
  return ::process_vm_readv(static_cast<pid_t>(process), &local, 1, &remote, 1, 0);
}

long Arena::write_member_memory(uint64_t process, uint64_t address, const std::byte* from,
                                size_t bytes) const {
  iovec local{const_cast<std::byte*>(from),
              bytes};  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  iovec remote{reinterpret_cast<void*>(address), bytes};  // NOLINT(performance-no-int-to-ptr)
  return ::process_vm_writev(static_cast<pid_t>(process), &local, 1, &remote, 1, 0);
}

std::string arena_name(const std::string& job_tag, uint64_t round, int leader) {
  return fmt::format("/kolo-{}-{}-arena-{}", job_tag, round, leader);
}

}  // namespace kolo::transport::shm
