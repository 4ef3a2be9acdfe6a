// The fast box of shared-memory links (transport/shm/fastbox.h): lines wrap around, the writer
// stops at unacknowledged lines and resumes after the reader's acknowledgement, sends span
// several lines and reads may take a line in pieces, a writer and a reader on two threads keep
// the stream intact; and a shm link that mixes fast-box and ring sends keeps its byte order.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transport/shm/fastbox.h"
#include "transport/shm/segment.h"
#include "transport/shm/shm_link.h"
#include "transport/shm_test_support.h"
#include "transport/wait_arming.h"

namespace kolo::transport::shm {
namespace {

std::byte byte_at(uint64_t position) {
  return std::byte(static_cast<uint8_t>(position * 7 + position / 253));
}

std::vector<std::byte> stream_bytes(uint64_t from, size_t size) {
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = byte_at(from + i);
  return bytes;
}

// Checks `got` against the stream from `from`; returns the first wrong position or -1.
int64_t first_wrong(const std::byte* got, size_t size, uint64_t from) {
  for (size_t i = 0; i < size; ++i) {
    if (got[i] != byte_at(from + i)) return static_cast<int64_t>(from + i);
  }
  return -1;
}

TEST(Fastbox, SendsOfEverySizeWrapAroundInOrder) {
  auto region = std::make_unique<FastboxRegion>();
  FastboxWriter writer(region.get());
  FastboxReader reader(region.get());
  uint64_t written = 0;
  uint64_t read = 0;
  std::vector<std::byte> in(4 * kFastboxPayload);
  // Many times around the 64 lines, with every send size from 1 byte to four full lines.
  for (int round = 0; round < 20; ++round) {
    for (size_t size = 1; size <= 4 * kFastboxPayload; size += (size < 60 ? 1 : 13)) {
      const auto out = stream_bytes(written, size);
      ASSERT_EQ(writer.write(out.data(), size), size) << "size " << size;
      written += size;
      EXPECT_TRUE(reader.readable());
      ASSERT_EQ(reader.read(in.data(), in.size()), size) << "size " << size;
      ASSERT_EQ(first_wrong(in.data(), size, read), -1) << "size " << size;
      read += size;
      EXPECT_FALSE(reader.readable());
      EXPECT_EQ(reader.read(in.data(), in.size()), 0u);
    }
  }
}

TEST(Fastbox, FullBoxWaitsForTheReadersAcknowledgement) {
  auto region = std::make_unique<FastboxRegion>();
  FastboxWriter writer(region.get());
  FastboxReader reader(region.get());
  const std::byte one{42};
  for (size_t i = 0; i < kFastboxLines; ++i) ASSERT_EQ(writer.write(&one, 1), 1u) << i;
  EXPECT_EQ(writer.write(&one, 1), 0u) << "every line is taken";
  std::byte in{};
  // The reader acknowledges every kFastboxAckEvery lines: one short of that frees nothing yet.
  for (size_t i = 0; i + 1 < kFastboxAckEvery; ++i) ASSERT_EQ(reader.read(&in, 1), 1u);
  EXPECT_EQ(writer.write(&one, 1), 0u);
  ASSERT_EQ(reader.read(&in, 1), 1u);
  EXPECT_EQ(region->acked.load(), kFastboxAckEvery);
  // Now exactly kFastboxAckEvery lines are free: a longer send goes in only partly.
  const auto out = stream_bytes(0, (kFastboxAckEvery + 2) * kFastboxPayload);
  EXPECT_EQ(writer.write(out.data(), out.size()), kFastboxAckEvery * kFastboxPayload);
  EXPECT_EQ(writer.write(out.data(), 1), 0u);
  // What is left comes out in order: the old one-byte lines, then the new ones.
  for (size_t i = kFastboxAckEvery; i < kFastboxLines; ++i) {
    ASSERT_EQ(reader.read(&in, 1), 1u);
    EXPECT_EQ(in, one);
  }
  std::vector<std::byte> rest(out.size());
  EXPECT_EQ(reader.read(rest.data(), rest.size()), kFastboxAckEvery * kFastboxPayload);
  EXPECT_EQ(first_wrong(rest.data(), kFastboxAckEvery * kFastboxPayload, 0), -1);
}

TEST(Fastbox, ReadsTakeLinesInPieces) {
  auto region = std::make_unique<FastboxRegion>();
  FastboxWriter writer(region.get());
  FastboxReader reader(region.get());
  const size_t size = 3 * kFastboxPayload - 5;  // three lines, the last one short
  const auto out = stream_bytes(0, size);
  ASSERT_EQ(writer.write(out.data(), size), size);
  std::vector<std::byte> in(size);
  size_t done = 0;
  while (done < size) {
    const size_t n = reader.read(in.data() + done, std::min<size_t>(7, size - done));
    ASSERT_GT(n, 0u) << "at " << done;
    done += n;
  }
  EXPECT_EQ(first_wrong(in.data(), size, 0), -1);
  EXPECT_FALSE(reader.readable());
}

TEST(Fastbox, ConcurrentWriterAndReaderKeepTheStream) {
  auto region = std::make_unique<FastboxRegion>();
  constexpr uint64_t kTotal = 400000;
  std::thread writer_thread([&] {
    FastboxWriter writer(region.get());
    uint64_t written = 0;
    size_t size = 1;
    while (written < kTotal) {
      const auto out = stream_bytes(written, std::min<uint64_t>(size, kTotal - written));
      const size_t n = writer.write(out.data(), out.size());
      if (n == 0) ::sched_yield();
      written += n;
      size = size % (4 * kFastboxPayload) + 1;
    }
  });
  FastboxReader reader(region.get());
  std::vector<std::byte> in(97);
  uint64_t read = 0;
  int64_t wrong = -1;
  while (read < kTotal && wrong < 0) {
    const size_t n = reader.read(in.data(), in.size());
    if (n == 0) ::sched_yield();
    wrong = first_wrong(in.data(), n, read);
    read += n;
  }
  writer_thread.join();
  EXPECT_EQ(wrong, -1);
  EXPECT_EQ(read, kTotal);
}

using testing::shm_link_pair;

TEST(ShmLinkFastbox, TinyAndLargeSendsStayInOneOrderedStream) {
  // A small ring, so large sends fill it and tiny ones behind them must not overtake.
  auto pair = shm_link_pair(4096);
  const size_t sizes[] = {8, 300, 52, 5000, 1, 208, 209, 104, 105, 53, 9000, 8, 8, 64};
  constexpr int kRounds = 300;
  uint64_t total = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (size_t size : sizes) total += size;
  }
  std::thread sender([&] {
    uint64_t sent = 0;
    for (int round = 0; round < kRounds; ++round) {
      for (size_t size : sizes) {
        const auto out = stream_bytes(sent, size);
        size_t done = 0;
        while (done < size) {
          const size_t n = pair.a->send_some({out.data() + done, size - done});
          if (n == 0) ::sched_yield();
          done += n;
        }
        sent += size;
      }
    }
  });
  const size_t buffers[] = {7, 64, 1000, 8, 200};
  std::vector<std::byte> in(1000);
  uint64_t read = 0;
  int64_t wrong = -1;
  for (size_t i = 0; read < total && wrong < 0; ++i) {
    const size_t want = std::min<uint64_t>(buffers[i % 5], total - read);
    const size_t n = pair.b->recv_some({in.data(), want});
    if (n == 0) ::sched_yield();
    wrong = first_wrong(in.data(), n, read);
    read += n;
  }
  sender.join();
  EXPECT_EQ(wrong, -1);
  EXPECT_EQ(read, total);
  EXPECT_FALSE(pair.b->has_pending_input());
}

// A receiver's preparation to sleep (WaitArming): true if it sees input and must not sleep.
bool about_to_sleep_sees_input(Link& link) {
  WaitArming arming;
  arming.begin();
  const int events = arming.arm(link, false, true);
  return arming.settle() || events < 0;
}

TEST(ShmLinkFastbox, PendingTinyInputIsSeenBeforeItIsRead) {
  auto pair = shm_link_pair(4096);
  EXPECT_FALSE(pair.b->has_pending_input());
  const std::byte tiny[8] = {};
  ASSERT_EQ(pair.a->send_some(tiny), sizeof(tiny));
  EXPECT_TRUE(pair.b->has_pending_input());
  // A receiver about to sleep sees it and does not sleep.
  EXPECT_TRUE(about_to_sleep_sees_input(*pair.b));
  std::byte in[8];
  EXPECT_EQ(pair.b->recv_some(in), sizeof(in));
  EXPECT_FALSE(pair.b->has_pending_input());
  EXPECT_FALSE(about_to_sleep_sees_input(*pair.b));
}

}  // namespace
}  // namespace kolo::transport::shm
