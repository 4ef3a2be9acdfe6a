// The one little-endian writer/reader: fixed-width fields land in little-endian order whatever the
// host, everything written reads back, and every malformed input is a ProtocolError that names
// the context and the offset before anything is allocated.
#include "base/byte_codec.h"

#include <gtest/gtest.h>

#include <limits>

#include "base/errors.h"

namespace kolo {
namespace {

std::string failure_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const ProtocolError& error) {
    return error.what();
  }
  return "no error";
}

TEST(ByteCodecTest, FixedWidthFieldsAreLittleEndian) {
  ByteWriter out;
  out.u32(0x04030201);
  out.i64(-2);
  const std::vector<std::byte> bytes = out.take();
  ASSERT_EQ(bytes.size(), 12u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(bytes[i], std::byte(i + 1));
  EXPECT_EQ(bytes[4], std::byte{0xfe});
  for (int i = 5; i < 12; ++i) EXPECT_EQ(bytes[i], std::byte{0xff});
  std::byte raw[3];
  store_little_endian(raw, 0xabcdef, 3);
  EXPECT_EQ(raw[0], std::byte{0xef});
  EXPECT_EQ(load_little_endian(raw, 3), 0xabcdefu);
}

TEST(ByteCodecTest, EverythingWrittenReadsBack) {
  ByteWriter out;
  out.u8(7);
  out.u32(std::numeric_limits<uint32_t>::max());
  out.u64(std::numeric_limits<uint64_t>::max());
  out.i32(-5);
  out.i64(std::numeric_limits<int64_t>::min());
  out.f64(-0.125);
  out.boolean(true);
  out.count(2);
  out.string("key");
  out.long_string(std::string("a\0b", 3));
  const std::string text = out.take_string();
  ByteReader in(std::string_view(text), "test message");
  EXPECT_EQ(in.u8(), 7);
  EXPECT_EQ(in.u32(), std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(in.u64(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(in.i32(), -5);
  EXPECT_EQ(in.i64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(in.f64(), -0.125);
  EXPECT_TRUE(in.boolean("flag"));
  EXPECT_EQ(in.count(0, "items"), 2u);
  EXPECT_EQ(in.string("key"), "key");
  EXPECT_EQ(in.long_string("value"), std::string("a\0b", 3));
  EXPECT_NO_THROW(in.expect_end());
}

TEST(ByteCodecTest, MalformedInputNamesContextFieldAndOffset) {
  ByteWriter out;
  out.u32(1000);  // a string length, or a count, far beyond what follows
  out.u8(2);
  const std::vector<std::byte> bytes = out.take();
  EXPECT_EQ(failure_of([&] {
              ByteReader in(bytes, "frame from rank 2");
              (void)in.string("key", 100);
            }),
            "frame from rank 2: key of 1000 bytes is over the limit of 100 (at byte 4 of 5)");
  EXPECT_EQ(failure_of([&] {
              ByteReader in(bytes, "m");
              (void)in.string("key");
            }),
            "m: truncated: key needs 1000 bytes, 1 remain (at byte 4 of 5)");
  EXPECT_EQ(failure_of([&] {
              ByteReader in(bytes, "m");
              (void)in.count(8, "shape");
            }),
            "m: shape claims 1000 items of at least 8 bytes but only 1 bytes remain (at byte 4 of "
            "5)");
  EXPECT_EQ(failure_of([&] {
              ByteReader in(bytes, "m");
              (void)in.u32();
              (void)in.boolean("flag");
            }),
            "m: flag is 2, expected 0 or 1 (at byte 5 of 5)");
  EXPECT_EQ(failure_of([&] {
              ByteReader in(bytes, "m");
              (void)in.u64();
            }),
            "m: truncated: a fixed-width field needs 8 bytes, 5 remain (at byte 0 of 5)");
  EXPECT_EQ(failure_of([&] {
              ByteReader in(bytes, "m");
              (void)in.u32();
              in.expect_end();
            }),
            "m: 1 unexpected trailing bytes (at byte 4 of 5)");
  EXPECT_EQ(failure_of([&] {
              ByteReader in(bytes, "m");
              (void)in.u32();
              (void)in.enum_value(2, "op");
            }),
            "m: op has invalid value 2 (at byte 5 of 5)");
}

}  // namespace
}  // namespace kolo
