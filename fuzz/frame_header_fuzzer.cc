// Length-prefixed control frames (transport/frame_header.h) as read from a peer's socket: the
// fuzz input is the byte stream the peer sent. read_frame must return frames no longer than the
// limit and exactly as sent, or throw (ProtocolError for an oversized length, PeerError when the
// stream ends early), never allocate what a forged length announces.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "fuzz/fuzz_support.h"
#include "transport/tcp/framing.h"
#include "transport/tcp/socket.h"

namespace {
// Small, so that forged lengths between it and the input size are exercised.
constexpr uint64_t kLimit = 1024;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kolo;
  if (size > 60000) return 0;  // stays within one socket buffer: the writer never blocks

  if (size >= transport::kFrameHeaderSize) {
    std::byte header[transport::kFrameHeaderSize];
    std::memcpy(header, data, sizeof(header));
    fuzz::refuses_cleanly([&] {
      const uint64_t length = transport::decode_frame_header(header, kLimit, "fuzz peer");
      fuzz::require(length <= kLimit, "decoded frame length within the limit");
      std::byte again[transport::kFrameHeaderSize];
      transport::encode_frame_header(length, again);
      fuzz::require(std::memcmp(header, again, sizeof(header)) == 0, "header round trip");
    });
  }

  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
  transport::Socket reader(fds[0]);
  transport::Socket writer(fds[1]);
  transport::write_all(writer, data, size, Deadline(std::chrono::seconds(10)), "fuzz");
  writer.reset();  // the peer is done: reading past the input is end-of-stream

  size_t consumed = 0;
  fuzz::refuses_cleanly([&] {
    for (;;) {
      const std::string frame =
          transport::read_frame(reader, kLimit, Deadline(std::chrono::seconds(10)), "fuzz peer");
      fuzz::require(frame.size() <= kLimit, "read_frame obeys the limit");
      consumed += transport::kFrameHeaderSize;
      fuzz::require(consumed + frame.size() <= size, "frame lies inside the stream");
      fuzz::require(std::memcmp(frame.data(), data + consumed, frame.size()) == 0,
                    "frame payload is what the peer sent");
      consumed += frame.size();
    }
  });
  return 0;
}
