#include "negotiation/wire_format.h"

#include <fmt/format.h>

#include <limits>

#include "base/errors.h"

namespace kolo::negotiation::wire {

void Writer::count(size_t n) {
  if (n > std::numeric_limits<uint32_t>::max()) {
    throw InvalidArgument(fmt::format("negotiation message field has {} items (limit 2^32-1)", n));
  }
  u32(static_cast<uint32_t>(n));
}

void Writer::string(std::string_view text) {
  count(text.size());
  for (char c : text) out_.push_back(static_cast<std::byte>(c));
}

void Reader::fail(std::string_view what) const {
  throw ProtocolError(fmt::format("{}: {} (at byte {} of {})", context_, what, pos_, data_.size()));
}

void Reader::need(size_t bytes, std::string_view what) {
  if (bytes > remaining()) {
    fail(fmt::format("truncated: {} needs {} bytes, {} remain", what, bytes, remaining()));
  }
}

uint64_t Reader::little_endian(int bytes) {
  need(static_cast<size_t>(bytes), "a fixed-width field");
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(data_[pos_ + static_cast<size_t>(i)]) << (8 * i);
  }
  pos_ += static_cast<size_t>(bytes);
  return value;
}

uint8_t Reader::u8() { return static_cast<uint8_t>(little_endian(1)); }

bool Reader::boolean(std::string_view field) {
  uint8_t value = u8();
  if (value > 1) fail(fmt::format("{} is {}, expected 0 or 1", field, value));
  return value == 1;
}

size_t Reader::count(size_t min_item_bytes, std::string_view field) {
  size_t n = u32();
  // n * min_item_bytes cannot overflow: n < 2^32 and min_item_bytes is a small constant.
  if (n * min_item_bytes > remaining()) {
    fail(fmt::format("{} claims {} items of at least {} bytes but only {} bytes remain", field, n,
                     min_item_bytes, remaining()));
  }
  return n;
}

std::string Reader::string(std::string_view field) {
  size_t length = count(1, field);
  std::string text(reinterpret_cast<const char*>(data_.data() + pos_), length);
  pos_ += length;
  return text;
}

uint8_t Reader::enum_value(uint8_t limit, std::string_view field) {
  uint8_t value = u8();
  if (value >= limit) fail(fmt::format("{} has invalid value {}", field, value));
  return value;
}

void Reader::expect_end() {
  if (remaining() != 0) fail(fmt::format("{} unexpected trailing bytes", remaining()));
}

}  // namespace kolo::negotiation::wire
