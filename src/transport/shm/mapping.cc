#include "transport/shm/mapping.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/errors.h"
#include "base/unique_fd.h"

namespace kolo::transport::shm {

namespace {

std::byte* map(int fd, size_t size, const std::string& name) {
  // MAP_POPULATE: fault every page in now, not one 4 KiB page per message while the rings
  // first wrap (that made the first few hundred small messages several times slower).
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) throw SystemError("mmap", errno, name);
  return static_cast<std::byte*>(base);
}

}  // namespace

std::optional<Mapping> Mapping::create(const std::string& name, size_t size, std::string& why) {
  const UniqueFd fd(::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) throw SystemError("shm_open", errno, name);
  // Reserving every page now turns "no room in /dev/shm" into an error here instead of a SIGBUS
  // on first touch (Docker's default /dev/shm is 64 MB).
  const int err = ::posix_fallocate(fd.fd(), 0, static_cast<off_t>(size));
  if (err != 0) {
    ::shm_unlink(name.c_str());
    const auto free_bytes = dev_shm_free_bytes();
    why = fmt::format("cannot reserve {} bytes in /dev/shm ({}; {} bytes free)", size,
                      std::strerror(err), free_bytes ? fmt::format("{}", *free_bytes) : "?");
    return std::nullopt;
  }
  try {
    // The mapping outlives the descriptor, which closes on return.
    return Mapping(map(fd.fd(), size, name), size);
  } catch (...) {
    ::shm_unlink(name.c_str());
    throw;
  }
}

Mapping Mapping::open(const std::string& name, size_t size) {
  const UniqueFd fd(::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600));
  if (!fd.valid()) throw SystemError("shm_open", errno, name);
  struct stat info {};
  if (::fstat(fd.fd(), &info) != 0 || static_cast<size_t>(info.st_size) != size) {
    throw ProtocolError(
        fmt::format("shared-memory object {} has {} bytes, expected {}", name, info.st_size, size));
  }
  return Mapping(map(fd.fd(), size, name), size);
}

void Mapping::unlink(const std::string& name) { ::shm_unlink(name.c_str()); }

Mapping::Mapping(Mapping&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(other.size_) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, size_);
    base_ = std::exchange(other.base_, nullptr);
    size_ = other.size_;
  }
  return *this;
}

Mapping::~Mapping() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

std::optional<uint64_t> dev_shm_free_bytes() {
  struct statvfs info {};
  if (::statvfs("/dev/shm", &info) != 0) return std::nullopt;
  return static_cast<uint64_t>(info.f_bavail) * info.f_frsize;
}

}  // namespace kolo::transport::shm
