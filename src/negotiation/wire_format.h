// Primitive writer and bounds-checked reader behind wire.cc. Kept apart so the message layouts
// in wire.cc read as a list of fields.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kolo::negotiation::wire {

class Writer {
 public:
  void u8(uint8_t value) { out_.push_back(static_cast<std::byte>(value)); }
  void u32(uint32_t value) { little_endian(value, 4); }
  void i32(int32_t value) { little_endian(static_cast<uint32_t>(value), 4); }
  void i64(int64_t value) { little_endian(static_cast<uint64_t>(value), 8); }
  void f64(double value) { little_endian(std::bit_cast<uint64_t>(value), 8); }
  void boolean(bool value) { u8(value ? 1 : 0); }
  void count(size_t n);  // u32; throws InvalidArgument beyond 2^32-1 (never happens in practice)
  void string(std::string_view text);

  [[nodiscard]] std::vector<std::byte> take() { return std::move(out_); }

 private:
  void little_endian(uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<std::byte>(value >> (8 * i)));
  }
  std::vector<std::byte> out_;
};

// Every read checks the remaining length first; failures throw ProtocolError with the prefix
// given at construction ("malformed request list from rank 3") and the byte offset.
class Reader {
 public:
  Reader(std::span<const std::byte> data, std::string context)
      : data_(data), context_(std::move(context)) {}

  uint8_t u8();
  uint32_t u32() { return static_cast<uint32_t>(little_endian(4)); }
  int32_t i32() { return static_cast<int32_t>(static_cast<uint32_t>(little_endian(4))); }
  int64_t i64() { return static_cast<int64_t>(little_endian(8)); }
  double f64() { return std::bit_cast<double>(little_endian(8)); }
  bool boolean(std::string_view field);
  // A u32 count of items that each take at least `min_item_bytes` on the wire: refused if the
  // remaining bytes cannot possibly hold them, so a forged count never drives an allocation.
  size_t count(size_t min_item_bytes, std::string_view field);
  std::string string(std::string_view field);
  // An enum stored as u8 whose valid values are [0, limit).
  uint8_t enum_value(uint8_t limit, std::string_view field);

  [[nodiscard]] size_t remaining() const { return data_.size() - pos_; }
  void expect_end();
  [[noreturn]] void fail(std::string_view what) const;

 private:
  uint64_t little_endian(int bytes);
  void need(size_t bytes, std::string_view what);

  std::span<const std::byte> data_;
  size_t pos_ = 0;
  std::string context_;
};

}  // namespace kolo::negotiation::wire
