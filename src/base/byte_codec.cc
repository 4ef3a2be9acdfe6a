#include "base/byte_codec.h"

#include <fmt/format.h>

#include "base/errors.h"

namespace kolo {

void store_little_endian(std::byte* out, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<std::byte>(value >> (8 * i));
}

uint64_t load_little_endian(const std::byte* in, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(in[i]) << (8 * i);
  return value;
}

void ByteWriter::put(uint64_t value, size_t bytes) {
  const size_t at = out_.size();
  out_.resize(at + bytes);
  store_little_endian(out_.data() + at, value, bytes);
}

void ByteWriter::append(std::string_view text) {
  const auto* first = reinterpret_cast<const std::byte*>(text.data());
  out_.insert(out_.end(), first, first + text.size());
}

void ByteWriter::count(size_t n) {
  if (n > std::numeric_limits<uint32_t>::max()) {
    throw InvalidArgument(fmt::format("message field has {} items (limit 2^32-1)", n));
  }
  u32(static_cast<uint32_t>(n));
}

void ByteWriter::string(std::string_view text) {
  count(text.size());
  append(text);
}

void ByteWriter::long_string(std::string_view text) {
  u64(text.size());
  append(text);
}

std::string ByteWriter::take_string() {
  std::string text(reinterpret_cast<const char*>(out_.data()), out_.size());
  out_.clear();
  return text;
}

void ByteReader::fail(std::string_view what) const {
  throw ProtocolError(fmt::format("{}: {} (at byte {} of {})", context_, what, pos_, data_.size()));
}

void ByteReader::need(size_t bytes, std::string_view what) {
  if (bytes > remaining()) {
    fail(fmt::format("truncated: {} needs {} bytes, {} remain", what, bytes, remaining()));
  }
}

uint64_t ByteReader::take(size_t bytes) {
  need(bytes, "a fixed-width field");
  const uint64_t value = load_little_endian(data_.data() + pos_, bytes);
  pos_ += bytes;
  return value;
}

bool ByteReader::boolean(std::string_view field) {
  const uint8_t value = u8();
  if (value > 1) fail(fmt::format("{} is {}, expected 0 or 1", field, value));
  return value == 1;
}

size_t ByteReader::count(size_t min_item_bytes, std::string_view field) {
  const size_t n = u32();
  // n * min_item_bytes cannot overflow: n < 2^32 and min_item_bytes is a small constant.
  if (n * min_item_bytes > remaining()) {
    fail(fmt::format("{} claims {} items of at least {} bytes but only {} bytes remain", field, n,
                     min_item_bytes, remaining()));
  }
  return n;
}

std::string ByteReader::text_of(uint64_t length, size_t limit, std::string_view field) {
  // Checked before allocating: the length came from the peer.
  if (length > limit) {
    fail(fmt::format("{} of {} bytes is over the limit of {}", field, length, limit));
  }
  need(static_cast<size_t>(length), field);
  std::string text(reinterpret_cast<const char*>(data_.data() + pos_), static_cast<size_t>(length));
  pos_ += static_cast<size_t>(length);
  return text;
}

std::string ByteReader::string(std::string_view field, size_t limit) {
  return text_of(u32(), limit, field);
}

std::string ByteReader::long_string(std::string_view field, size_t limit) {
  return text_of(u64(), limit, field);
}

uint8_t ByteReader::enum_value(uint8_t limit, std::string_view field) {
  const uint8_t value = u8();
  if (value >= limit) fail(fmt::format("{} has invalid value {}", field, value));
  return value;
}

void ByteReader::expect_end() {
  if (remaining() != 0) fail(fmt::format("{} unexpected trailing bytes", remaining()));
}

}  // namespace kolo
