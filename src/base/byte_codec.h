// The one little-endian encoder and bounds-checked decoder behind every hand-made byte format in
// kolo: negotiation messages, the rendezvous store protocol, frame headers, the mesh's hello.
// Fixed-width integers are little-endian whatever the host; strings are a length prefix (u32, or
// u64 for the store's values) and the bytes. The reader trusts nothing: every read checks the
// bytes that remain first, and every failure is a ProtocolError that starts with the context
// given at construction ("malformed request list from rank 3") and ends with the byte offset, so
// a corrupt or hostile message costs an error naming its sender, never a crash or a huge
// allocation.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kolo {

// `bytes` (1..8) little-endian bytes of `value` at `out`, and back. For fixed layouts written
// into a caller's array (a frame header, a hello); the writer and reader below use them too.
void store_little_endian(std::byte* out, uint64_t value, size_t bytes);
[[nodiscard]] uint64_t load_little_endian(const std::byte* in, size_t bytes);

class ByteWriter {
 public:
  void u8(uint8_t value) { out_.push_back(static_cast<std::byte>(value)); }
  void u32(uint32_t value) { put(value, 4); }
  void u64(uint64_t value) { put(value, 8); }
  void i32(int32_t value) { put(static_cast<uint32_t>(value), 4); }
  void i64(int64_t value) { put(static_cast<uint64_t>(value), 8); }
  void f64(double value) { put(std::bit_cast<uint64_t>(value), 8); }
  void boolean(bool value) { u8(value ? 1 : 0); }
  // A u32 count; throws InvalidArgument beyond 2^32-1 (no real message gets there).
  void count(size_t n);
  // u32 length, then the bytes.
  void string(std::string_view text);
  // u64 length, then the bytes.
  void long_string(std::string_view text);

  [[nodiscard]] std::vector<std::byte> take() { return std::move(out_); }
  [[nodiscard]] std::string take_string();

 private:
  void put(uint64_t value, size_t bytes);
  void append(std::string_view text);
  std::vector<std::byte> out_;
};

class ByteReader {
 public:
  ByteReader(std::span<const std::byte> data, std::string context)
      : data_(data), context_(std::move(context)) {}
  ByteReader(std::string_view data, std::string context)
      : ByteReader(std::as_bytes(std::span<const char>(data.data(), data.size())),
                   std::move(context)) {}

  uint8_t u8() { return static_cast<uint8_t>(take(1)); }
  uint32_t u32() { return static_cast<uint32_t>(take(4)); }
  uint64_t u64() { return take(8); }
  int32_t i32() { return static_cast<int32_t>(static_cast<uint32_t>(take(4))); }
  int64_t i64() { return static_cast<int64_t>(take(8)); }
  double f64() { return std::bit_cast<double>(take(8)); }
  // 0 or 1; anything else fails naming `field`.
  bool boolean(std::string_view field);
  // A u32 count of items that each take at least `min_item_bytes` on the wire: refused if the
  // remaining bytes cannot possibly hold them, so a forged count never drives an allocation.
  size_t count(size_t min_item_bytes, std::string_view field);
  // A string written by ByteWriter::string / long_string; refused (naming `field`) when its
  // length is over `limit` or over what remains, before anything is allocated.
  std::string string(std::string_view field, size_t limit = std::numeric_limits<size_t>::max());
  std::string long_string(std::string_view field,
                          size_t limit = std::numeric_limits<size_t>::max());
  // An enum stored as u8 whose valid values are [0, limit).
  uint8_t enum_value(uint8_t limit, std::string_view field);

  [[nodiscard]] size_t remaining() const { return data_.size() - pos_; }
  void expect_end();
  [[noreturn]] void fail(std::string_view what) const;

 private:
  uint64_t take(size_t bytes);
  void need(size_t bytes, std::string_view what);
  std::string text_of(uint64_t length, size_t limit, std::string_view field);

  std::span<const std::byte> data_;
  size_t pos_ = 0;
  std::string context_;
};

}  // namespace kolo
