#include "transport/shm/segment.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "base/errors.h"

namespace kolo::transport::shm {

namespace {

constexpr uint64_t kMagic = 0x6b6f6c6f73686d31ull;  // "kolo shm1"

struct SegmentHeader {
  uint64_t magic;
  uint64_t ring_bytes;
};

size_t header_bytes() { return kCacheLine; }
size_t ring_stride(size_t ring_bytes) { return sizeof(RingHeader) + ring_bytes; }

void* map(int fd, size_t size, const std::string& name) {
  // MAP_POPULATE: fault every page in now, not one 4 KiB page per message while the rings
  // first wrap (that made the first few hundred small messages several times slower).
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) throw SystemError("mmap", errno, name);
  return base;
}

}  // namespace

size_t Segment::bytes_needed(size_t ring_bytes) {
  return header_bytes() + 2 * ring_stride(ring_bytes);
}

std::optional<Segment> Segment::create(const std::string& name, size_t ring_bytes,
                                       std::string& why) {
  const size_t size = bytes_needed(ring_bytes);
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw SystemError("shm_open", errno, name);
  // Reserving every page now turns "no room in /dev/shm" into an error here instead of a SIGBUS
  // on first touch (Docker's default /dev/shm is 64 MB).
  const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
  if (err != 0) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    const auto free_bytes = dev_shm_free_bytes();
    why = fmt::format("cannot reserve {} bytes in /dev/shm ({}; {} bytes free)", size,
                      std::strerror(err), free_bytes ? fmt::format("{}", *free_bytes) : "?");
    return std::nullopt;
  }
  void* base = nullptr;
  try {
    base = map(fd, size, name);
  } catch (...) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    throw;
  }
  ::close(fd);
  auto* header = static_cast<SegmentHeader*>(base);
  header->ring_bytes = ring_bytes;
  for (int direction = 0; direction < 2; ++direction) {
    new (static_cast<std::byte*>(base) + header_bytes() + direction * ring_stride(ring_bytes))
        RingHeader();
  }
  header->magic = kMagic;
  return Segment(base, size, ring_bytes);
}

Segment Segment::open(const std::string& name, size_t ring_bytes) {
  const size_t size = bytes_needed(ring_bytes);
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw SystemError("shm_open", errno, name);
  struct stat info {};
  if (::fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) != size) {
    ::close(fd);
    throw ProtocolError(fmt::format("shared-memory segment {} has {} bytes, expected {}", name,
                                    info.st_size, size));
  }
  void* base = nullptr;
  try {
    base = map(fd, size, name);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  const auto* header = static_cast<const SegmentHeader*>(base);
  if (header->magic != kMagic || header->ring_bytes != ring_bytes) {
    ::munmap(base, size);
    throw ProtocolError(
        fmt::format("shared-memory segment {} is not a kolo segment of this job", name));
  }
  return Segment(base, size, ring_bytes);
}

void Segment::unlink(const std::string& name) { ::shm_unlink(name.c_str()); }

Segment::Segment(Segment&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      size_(other.size_),
      ring_bytes_(other.ring_bytes_) {}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, size_);
    base_ = std::exchange(other.base_, nullptr);
    size_ = other.size_;
    ring_bytes_ = other.ring_bytes_;
  }
  return *this;
}

Segment::~Segment() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

Ring Segment::ring(int direction) const {
  auto* start = static_cast<std::byte*>(base_) + header_bytes() +
                static_cast<size_t>(direction) * ring_stride(ring_bytes_);
  return Ring(reinterpret_cast<RingHeader*>(start), start + sizeof(RingHeader), ring_bytes_);
}

std::optional<uint64_t> dev_shm_free_bytes() {
  struct statvfs info {};
  if (::statvfs("/dev/shm", &info) != 0) return std::nullopt;
  return static_cast<uint64_t>(info.f_bavail) * info.f_frsize;
}

std::string segment_name(const std::string& job_tag, uint64_t round, int a, int b) {
  return fmt::format("/kolo-{}-{}-{}-{}", job_tag, round, a, b);
}

}  // namespace kolo::transport::shm
