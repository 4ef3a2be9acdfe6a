#include "fusion/fusion_buffer.h"

#include <new>
#include <utility>

namespace kolo::fusion {

namespace {
// Growth rounds up to whole pages: sizes vary a little from step to step (a last smaller batch),
// and reallocating for a few bytes each time would defeat reuse.
constexpr size_t kGrowthGranule = 4096;
}  // namespace

FusionBuffer::~FusionBuffer() { release(); }

FusionBuffer::FusionBuffer(FusionBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}

FusionBuffer& FusionBuffer::operator=(FusionBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

std::span<std::byte> FusionBuffer::get(size_t bytes) {
  if (bytes > capacity_) {
    size_t grown = (bytes + kGrowthGranule - 1) / kGrowthGranule * kGrowthGranule;
    // Allocate first: on bad_alloc the old buffer stays valid.
    auto* fresh = static_cast<std::byte*>(::operator new (grown, std::align_val_t{kAlignment}));
    release();
    data_ = fresh;
    capacity_ = grown;
  }
  return {data_, bytes};
}

void FusionBuffer::release() {
  if (data_ != nullptr) ::operator delete (data_, std::align_val_t{kAlignment});
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace kolo::fusion
