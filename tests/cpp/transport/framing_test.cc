#include "transport/tcp/framing.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base/errors.h"
#include "transport/tcp/socket_link.h"

namespace kolo::transport {
namespace {

using namespace std::chrono_literals;

TEST(Framing, HeaderIsEightBytesLittleEndian) {
  std::byte header[kFrameHeaderSize];
  encode_frame_header(0x0102030405060708ull, header);
  for (size_t i = 0; i < kFrameHeaderSize; ++i) {
    EXPECT_EQ(std::to_integer<int>(header[i]), 8 - static_cast<int>(i)) << "byte " << i;
  }
}

TEST(Framing, HeaderRoundTrips) {
  for (uint64_t length : std::initializer_list<uint64_t>{0, 1, 255, 256, 65536, 1ull << 40,
                                                         kDefaultFrameLimit}) {
    std::byte header[kFrameHeaderSize];
    encode_frame_header(length, header);
    EXPECT_EQ(decode_frame_header(header, ~0ull, "peer"), length);
  }
  std::byte header[kFrameHeaderSize];
  encode_frame_header(~0ull, header);
  EXPECT_EQ(decode_frame_header(header, ~0ull, "peer"), ~0ull);
}

TEST(Framing, LengthOverTheLimitIsAProtocolErrorNamingThePeer) {
  std::byte header[kFrameHeaderSize];
  encode_frame_header(1001, header);
  EXPECT_EQ(decode_frame_header(header, 1001, "rank 1"), 1001u);
  try {
    decode_frame_header(header, 1000, "rank 1 (10.0.0.1:5000)");
    FAIL() << "expected ProtocolError";
  } catch (const ProtocolError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 (10.0.0.1:5000)"), std::string::npos) << what;
    EXPECT_NE(what.find("1001"), std::string::npos) << what;
    EXPECT_NE(what.find("1000"), std::string::npos) << what;
  }
}

TEST(Framing, FramesRoundTripOverASocket) {
  auto [a, b] = socket_pair();
  write_frame(a, "", Deadline(5s), "b");
  write_frame(a, std::string("bin\0ary", 7), Deadline(5s), "b");
  EXPECT_EQ(read_frame(b, 100, Deadline(5s), "a"), "");
  EXPECT_EQ(read_frame(b, 100, Deadline(5s), "a"), std::string("bin\0ary", 7));
}

TEST(Framing, HostileLengthIsRefusedBeforeAllocating) {
  // 2^62 bytes could never be allocated: getting a ProtocolError (not bad_alloc) shows the limit
  // is checked first.
  auto [a, b] = socket_pair();
  std::byte header[kFrameHeaderSize];
  encode_frame_header(1ull << 62, header);
  write_all(a, header, sizeof(header), Deadline(5s), "b");
  EXPECT_THROW(read_frame(b, kDefaultFrameLimit, Deadline(5s), "hostile"), ProtocolError);
}

TEST(Framing, TruncatedFrameIsAPeerError) {
  auto [a, b] = socket_pair();
  std::byte header[kFrameHeaderSize];
  encode_frame_header(10, header);
  write_all(a, header, sizeof(header), Deadline(5s), "b");
  write_all(a, "abc", 3, Deadline(5s), "b");
  a.reset();
  EXPECT_THROW(read_frame(b, 100, Deadline(5s), "a"), PeerError);
}

}  // namespace
}  // namespace kolo::transport
