#include <algorithm>
#include <new>

#include "core/tensor_entry.h"

namespace kolo::core {

OwnedBuffer make_owned_buffer(size_t bytes, std::vector<int64_t> shape, DataType dtype) {
  OwnedBuffer out;
  // 64-byte alignment keeps the result usable for vectorised consumers.
  const size_t allocation = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  out.data = std::shared_ptr<std::byte[]>(
      static_cast<std::byte*>(::operator new[](allocation, std::align_val_t(64))),
      [](std::byte* p) { ::operator delete[](p, std::align_val_t(64)); });
  out.bytes = bytes;
  out.shape = std::move(shape);
  out.dtype = dtype;
  return out;
}

}  // namespace kolo::core
