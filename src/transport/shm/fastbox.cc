#include "transport/shm/fastbox.h"

#include <algorithm>
#include <cstring>

namespace kolo::transport::shm {

size_t FastboxWriter::write(const std::byte* data, size_t size) {
  const size_t wanted = (size + kFastboxPayload - 1) / kFastboxPayload;
  if (next_ + wanted - seen_acked_ > kFastboxLines) {
    // Would overwrite a line the reader may not have read: look at its acknowledgement (a
    // cache miss, once per kFastboxAckEvery lines at most in a steady stream).
    seen_acked_ = region_->acked.load(std::memory_order_acquire);
  }
  const size_t lines = std::min<size_t>(wanted, kFastboxLines - (next_ - seen_acked_));
  if (lines == 0) return 0;
  const size_t bytes = std::min(size, lines * kFastboxPayload);
  // Last line first: the first line's sequence, stored last, then publishes them all, so a
  // reader that sees it takes the whole send in one call instead of coming back for the rest.
  for (size_t i = lines; i-- > 0;) {
    FastboxLine& line = region_->lines[(next_ + i) % kFastboxLines];
    const size_t begin = i * kFastboxPayload;
    const size_t n = std::min(kFastboxPayload, bytes - begin);
    std::memcpy(line.payload, data + begin, n);
    line.length = static_cast<uint32_t>(n);
    line.sequence.store(next_ + i + 1, std::memory_order_release);
  }
  next_ += lines;
  return bytes;
}

bool FastboxReader::readable() const {
  return region_->lines[next_ % kFastboxLines].sequence.load(std::memory_order_acquire) ==
         next_ + 1;
}

size_t FastboxReader::read(std::byte* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    FastboxLine& line = region_->lines[next_ % kFastboxLines];
    if (line.sequence.load(std::memory_order_acquire) != next_ + 1) break;
    const size_t n = std::min<size_t>(line.length - offset_, size - done);
    std::memcpy(data + done, line.payload + offset_, n);
    done += n;
    offset_ += static_cast<uint32_t>(n);
    if (offset_ < line.length) break;  // the caller's buffer is full
    offset_ = 0;
    ++next_;
    // Release: the copies above happen before the writer may reuse these lines.
    if (next_ % kFastboxAckEvery == 0) region_->acked.store(next_, std::memory_order_release);
  }
  return done;
}

}  // namespace kolo::transport::shm
