// The stand-in GPU's communicators (fake_gpu_device.cc). By default a communicator of more than
// one rank only records. With FAKE_GPU_SHARED_DIR set, the ranks of a communicator (processes)
// really exchange bytes: each one maps the file <dir>/<unique id> (one slot per rank), and every
// collective is one rendezvous there, run at the call as the stand-in's streams run everything:
// each rank posts its input into its slot, waits until every rank posted, computes its output
// from the slots, and waits until every rank read them. Every rank must call the communicator's
// collectives in the same order, as NCCL requires. A wait that lasts a minute fails the call.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

namespace fake_gpu {

inline constexpr size_t kSlotBytes = size_t{1} << 20;  // the largest input a rank may post

struct Area {
  std::atomic<uint64_t> posted;
  std::atomic<uint64_t> read;
  unsigned char pad[48];
};
static_assert(sizeof(Area) == 64);

struct Comm {
  int nranks = 1;
  int rank = 0;
  Area* area = nullptr;  // null: a communicator that only records
  uint64_t calls = 0;
};

inline const char* shared_dir() { return std::getenv("FAKE_GPU_SHARED_DIR"); }

// Every communicator lives as long as the process (a test may use a handle after its abort);
// kept here, reachable, so that LeakSanitizer does not report them.
inline Comm* new_comm(int nranks, int rank) {
  static std::mutex mutex;
  static std::deque<Comm> comms;
  const std::lock_guard<std::mutex> lock(mutex);
  return &comms.emplace_back(Comm{nranks, rank, nullptr, 0});
}

inline Comm* open_comm(int nranks, int rank, const char* id) {
  Comm* comm = new_comm(nranks, rank);
  const char* dir = shared_dir();
  if (dir == nullptr || nranks == 1) return comm;
  const std::string path = std::string(dir) + "/" + id;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) std::abort();
  const size_t size = sizeof(Area) + kSlotBytes * static_cast<size_t>(nranks);
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) std::abort();  // the same size on every rank
  void* mapped = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED) std::abort();
  comm->area = static_cast<Area*>(mapped);
  return comm;
}

inline std::byte* slot(const Comm& comm, int rank) {
  return reinterpret_cast<std::byte*>(comm.area + 1) + kSlotBytes * static_cast<size_t>(rank);
}

inline bool wait_for(const std::atomic<uint64_t>& counter, uint64_t target) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (counter.load(std::memory_order_acquire) < target) {
    if (std::chrono::steady_clock::now() > until) return false;
    ::usleep(100);  // ranks may outnumber the cores: leave them the CPU
  }
  return true;
}

// Posts `bytes` of `mine` and waits for every rank's; false when a rank never came (or the input
// is too large). finish() must follow once the slots were read.
inline bool post(Comm& comm, const void* mine, size_t bytes) {
  if (bytes > kSlotBytes) return false;
  if (bytes > 0) std::memcpy(slot(comm, comm.rank), mine, bytes);
  ++comm.calls;
  comm.area->posted.fetch_add(1, std::memory_order_acq_rel);
  return wait_for(comm.area->posted, comm.calls * static_cast<uint64_t>(comm.nranks));
}

inline bool finish(Comm& comm) {
  comm.area->read.fetch_add(1, std::memory_order_acq_rel);
  return wait_for(comm.area->read, comm.calls * static_cast<uint64_t>(comm.nranks));
}

}  // namespace fake_gpu
