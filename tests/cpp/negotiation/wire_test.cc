#include "negotiation/wire.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "base/errors.h"

namespace kolo::negotiation {
namespace {

Request sample_request(int rank, std::string name) {
  Request r;
  r.rank = rank;
  r.name = std::move(name);
  r.op = OpType::allgather;
  r.reduce_op = UserReduceOp::average;
  r.dtype = DataType::bfloat16;
  r.shape = {7, 0, 3, int64_t{1} << 40};
  r.root = 3;
  r.prescale = 0.125;
  r.postscale = -2.5e-300;
  r.process_set = 4;
  r.device = DeviceKind::cuda;
  r.device_index = 2;
  r.invalid = "rank 2: alltoall of tensor 'a': splits must be integers";
  return r;
}

Response sample_response() {
  Response r;
  r.op = OpType::broadcast;
  r.names = {"grad.fc1", "", "grad.\xe2\x82\xac"};
  r.reduce_op = UserReduceOp::product;
  r.dtype = DataType::int16;
  r.root = -1;
  r.prescale = std::numeric_limits<double>::infinity();
  r.postscale = 1.0 / 3.0;
  r.process_set = 9;
  r.device = DeviceKind::cuda;
  r.first_dims = {1, 2, 3, 0};
  r.error = "Mismatched dtype for tensor 'x'";
  r.shape = {4, 0, 5};
  return r;
}

RequestList sample_request_list() {
  RequestList list;
  list.requests = {sample_request(2, "a"), sample_request(2, "layer.weight"), Request{}};
  list.shutdown = true;
  return list;
}

ResponseList sample_response_list() {
  ResponseList list;
  list.responses = {sample_response(), Response{}};
  list.shutdown = true;
  list.shutdown_ranks = {1, 3};
  return list;
}

TEST(WireTest, RequestListRoundTrips) {
  RequestList list = sample_request_list();
  EXPECT_EQ(decode_request_list(encode(list), 2), list);
  EXPECT_EQ(decode_request_list(encode(RequestList{}), 0), RequestList{});
}

TEST(WireTest, ResponseListRoundTrips) {
  ResponseList list = sample_response_list();
  EXPECT_EQ(decode_response_list(encode(list), 0), list);
  EXPECT_EQ(decode_response_list(encode(ResponseList{}), 0), ResponseList{});
}

TEST(WireTest, TunedParametersRoundTrip) {
  ResponseList list = sample_response_list();
  list.parameters = TunedParameters{2.5, 64ull << 20, false, true};
  EXPECT_EQ(decode_response_list(encode(list), 0), list);
  std::vector<std::byte> bytes = encode(list);
  bytes.pop_back();  // the final flag cut off
  EXPECT_THROW(decode_response_list(bytes, 0), ProtocolError);
}

TEST(WireTest, EveryEnumValueRoundTrips) {
  for (int op = 0; op <= static_cast<int>(OpType::process_set_remove); ++op) {
    for (int dt = 0; dt < kNumDataTypes; ++dt) {
      Request r = sample_request(0, "t");
      r.op = static_cast<OpType>(op);
      r.dtype = static_cast<DataType>(dt);
      r.reduce_op = static_cast<UserReduceOp>(dt % 6);
      RequestList list{{r}, false};
      EXPECT_EQ(decode_request_list(encode(list), 0), list);
    }
  }
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ProtocolError& e) {
    return e.what();
  }
  return "no ProtocolError";
}

TEST(WireTest, ErrorNamesSenderAndKind) {
  auto bytes = encode(sample_request_list());
  bytes.pop_back();
  std::string message = error_of([&] { (void)decode_request_list(bytes, 5); });
  EXPECT_NE(message.find("malformed request list from rank 5"), std::string::npos) << message;

  auto responses = encode(sample_response_list());
  responses.push_back(std::byte{0});
  message = error_of([&] { (void)decode_response_list(responses, 0); });
  EXPECT_NE(message.find("malformed response list from rank 0"), std::string::npos) << message;
  EXPECT_NE(message.find("trailing"), std::string::npos) << message;
}

TEST(WireTest, KindsAreNotInterchangeable) {
  EXPECT_THROW((void)decode_request_list(encode(ResponseList{}), 1), ProtocolError);
  EXPECT_THROW((void)decode_response_list(encode(RequestList{}), 1), ProtocolError);
}

TEST(WireTest, WrongVersionIsRefused) {
  auto bytes = encode(RequestList{});
  bytes[1] = std::byte{kWireVersion + 1};
  std::string message = error_of([&] { (void)decode_request_list(bytes, 3); });
  EXPECT_NE(message.find("version"), std::string::npos) << message;
}

TEST(WireTest, EveryTruncationThrows) {
  auto requests = encode(sample_request_list());
  for (size_t n = 0; n < requests.size(); ++n) {
    std::span<const std::byte> prefix(requests.data(), n);
    EXPECT_THROW((void)decode_request_list(prefix, 1), ProtocolError) << "length " << n;
  }
  auto responses = encode(sample_response_list());
  for (size_t n = 0; n < responses.size(); ++n) {
    std::span<const std::byte> prefix(responses.data(), n);
    EXPECT_THROW((void)decode_response_list(prefix, 0), ProtocolError) << "length " << n;
  }
}

// Layout of an encoded request list with one request: kind, version, shutdown, count(4), then
// rank(4), name length(4) + name, op, reduce op, dtype, shape count(4), ...
constexpr size_t kFirstRequest = 2 + 1 + 4;

std::vector<std::byte> one_request_bytes() {
  Request r;
  r.rank = 1;
  r.name = "x";
  r.shape = {2};
  return encode(RequestList{{r}, false});
}

void put_u32(std::vector<std::byte>& bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<std::byte>(value >> (8 * i));
}

TEST(WireTest, HugeCountsAreRefusedBeforeAllocating) {
  auto bytes = one_request_bytes();
  auto forged = bytes;
  put_u32(forged, 3, 0xffffffffu);  // request count
  EXPECT_THROW((void)decode_request_list(forged, 1), ProtocolError);

  forged = bytes;
  put_u32(forged, kFirstRequest + 4, 0xfffffff0u);  // name length
  std::string message = error_of([&] { (void)decode_request_list(forged, 1); });
  EXPECT_NE(message.find("request name"), std::string::npos) << message;

  forged = bytes;
  put_u32(forged, kFirstRequest + 4 + 4 + 1 + 3, 0x40000000u);  // shape count
  message = error_of([&] { (void)decode_request_list(forged, 1); });
  EXPECT_NE(message.find("shape of 'x'"), std::string::npos) << message;
}

TEST(WireTest, InvalidEnumsAndValuesAreRefused) {
  const size_t op_at = kFirstRequest + 4 + 4 + 1;
  struct Case {
    size_t offset;
    uint8_t value;
    std::string expect;
  };
  std::vector<Case> cases = {
      {2, 2, "shutdown flag"},
      {op_at, 9, "op type"},
      {op_at + 1, 6, "reduce op"},
      {op_at + 2, static_cast<uint8_t>(kNumDataTypes), "data type"},
      {op_at + 3 + 4 + 7, 0x80, "negative"},  // top byte of the one dim
  };
  auto bytes = one_request_bytes();
  // device byte: after shape(4 + 8), root(4), prescale(8), postscale(8), process set(4).
  cases.push_back({op_at + 3 + 12 + 4 + 8 + 8 + 4, 3, "device"});
  for (const auto& c : cases) {
    auto forged = bytes;
    forged[c.offset] = std::byte{c.value};
    std::string message = error_of([&] { (void)decode_request_list(forged, 4); });
    EXPECT_NE(message.find(c.expect), std::string::npos)
        << "offset " << c.offset << ": " << message;
    EXPECT_NE(message.find("from rank 4"), std::string::npos) << message;
  }
}

// Random bytes and random corruptions of valid frames: decoding either succeeds or throws
// ProtocolError; anything else (crash, bad_alloc, other exception) fails the test.
TEST(WireTest, RandomInputNeverCrashes) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> byte(0, 255);
  auto decode_both = [](const std::vector<std::byte>& bytes) {
    try {
      (void)decode_request_list(bytes, 0);
    } catch (const ProtocolError&) {
    }
    try {
      (void)decode_response_list(bytes, 0);
    } catch (const ProtocolError&) {
    }
  };
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::byte> bytes(static_cast<size_t>(byte(rng)));
    for (auto& b : bytes) b = static_cast<std::byte>(byte(rng));
    if (!bytes.empty()) bytes[0] = std::byte{static_cast<uint8_t>(i % 2 ? 0x51 : 0x50)};
    if (bytes.size() > 1) bytes[1] = std::byte{kWireVersion};
    ASSERT_NO_THROW(decode_both(bytes));
  }
  const std::vector<std::vector<std::byte>> valid = {encode(sample_request_list()),
                                                     encode(sample_response_list())};
  for (int i = 0; i < 5000; ++i) {
    auto bytes = valid[static_cast<size_t>(i % 2)];
    int flips = 1 + i % 4;
    for (int f = 0; f < flips; ++f) {
      bytes[static_cast<size_t>(rng() % bytes.size())] = static_cast<std::byte>(byte(rng));
    }
    ASSERT_NO_THROW(decode_both(bytes));
  }
}

// Found by fuzz/negotiation_wire_fuzzer.cc: alltoall splits summing beyond int64 reached the
// coordinator's split check as signed overflow (undefined behaviour). Sizes that no tensor can
// have are refused where they arrive, naming the field.
TEST(WireTest, SizesBeyond64BitsAreRefused) {
  constexpr int64_t kHuge = int64_t{1} << 62;
  Request splits = sample_request(1, "tokens");
  splits.op = OpType::alltoall;
  splits.shape = {6};
  splits.splits = {kHuge, kHuge, kHuge};
  std::string message = error_of([&] {
    (void)decode_request_list(encode(RequestList{{splits}, false}), 1);
  });
  EXPECT_NE(message.find("splits of 'tokens' has a sum beyond 64 bits"), std::string::npos)
      << message;
  EXPECT_NE(message.find("from rank 1"), std::string::npos) << message;

  Request shape = sample_request(2, "big");
  shape.shape = {kHuge, 4};
  message = error_of([&] { (void)decode_request_list(encode(RequestList{{shape}, false}), 2); });
  EXPECT_NE(message.find("shape of 'big' has a product beyond 64 bits"), std::string::npos)
      << message;

  Response gathered = sample_response();
  gathered.first_dims = {kHuge, kHuge, kHuge};
  message = error_of([&] {
    (void)decode_response_list(encode(ResponseList{{gathered}, false, {}, std::nullopt}), 0);
  });
  EXPECT_NE(message.find("first_dims has a sum beyond 64 bits"), std::string::npos) << message;
}

// The largest sizes that do fit still round trip, and a process set's rank list (carried in the
// shape field) is not a product: a set of 40 ranks must not be refused.
TEST(WireTest, LargestSizesAndLongRankListsRoundTrip) {
  Request big = sample_request(0, "big");
  big.shape = {std::numeric_limits<int64_t>::max(), 1};
  big.splits = {std::numeric_limits<int64_t>::max() - 1, 1};
  Request set = sample_request(0, "set");
  set.op = OpType::process_set_add;
  set.shape.clear();
  for (int64_t rank = 1; rank <= 40; ++rank) set.shape.push_back(rank);
  const RequestList list{{big, set}, false};
  EXPECT_EQ(decode_request_list(encode(list), 0), list);
}

// Control operations carry their own argument list (version 3): a remove's id and busy flag, a
// join's last rank (negative values included), each in both directions.
TEST(WireTest, ControlArgumentsRoundTrip) {
  Request remove = sample_request(1, "kolo.remove_process_set.0");
  remove.op = OpType::process_set_remove;
  remove.args = {4, 1};
  Request join = sample_request(1, "kolo.join.1");
  join.op = OpType::join;
  const RequestList requests{{remove, join}, false};
  EXPECT_EQ(decode_request_list(encode(requests), 1), requests);
  Response joined = sample_response();
  joined.op = OpType::join;
  joined.args = {-1};
  Response added = sample_response();
  added.op = OpType::process_set_add;
  added.args = {0, 2, 5};
  ResponseList responses;
  responses.responses = {joined, added};
  EXPECT_EQ(decode_response_list(encode(responses), 0), responses);
}

// A frame of another version is refused naming both versions.
TEST(WireTest, AnotherVersionIsRefusedNamingBoth) {
  std::vector<std::byte> bytes = encode(RequestList{});
  bytes.at(1) = std::byte{2};
  try {
    (void)decode_request_list(bytes, 3);
    FAIL() << "version 2 should be refused";
  } catch (const ProtocolError& error) {
    EXPECT_NE(std::string(error.what()).find("protocol version 2, this build speaks 3"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace kolo::negotiation
