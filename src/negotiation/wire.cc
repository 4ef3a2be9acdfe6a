#include "negotiation/wire.h"

#include <fmt/format.h>

#include "base/byte_codec.h"
#include "base/errors.h"

namespace kolo::negotiation {

namespace {

// First byte of every frame: which message it is, so a response list fed to the request decoder
// (or any stray bytes) is refused at once.
constexpr uint8_t kRequestListKind = 0x51;   // 'Q'
constexpr uint8_t kResponseListKind = 0x50;  // 'P'

// Valid ranges of the enums carried on the wire (values are append-only, see message.h).
constexpr uint8_t kOpTypeLimit = static_cast<uint8_t>(OpType::process_set_remove) + 1;
constexpr uint8_t kUserReduceOpLimit = static_cast<uint8_t>(UserReduceOp::adasum) + 1;
constexpr uint8_t kDeviceKindLimit = static_cast<uint8_t>(DeviceKind::cuda_through_host) + 1;

// Smallest encodings, used to refuse forged counts before allocating.
constexpr size_t kMinRequestBytes =
    4 + 4 + 1 + 1 + 1 + 4 + 4 + 8 + 8 + 4 + 1 + 4 + 4 + 4 + 4 + 4 + 4;
constexpr size_t kMinResponseBytes = 1 + 4 + 1 + 1 + 4 + 8 + 8 + 4 + 1 + 4 + 4 + 4 + 4 + 4 + 4;
constexpr size_t kStringHeaderBytes = 4;

void write_header(ByteWriter& out, uint8_t kind) {
  out.u8(kind);
  out.u8(kWireVersion);
}

void read_header(ByteReader& in, uint8_t kind) {
  uint8_t got = in.u8();
  if (got != kind)
    in.fail(fmt::format("message kind byte is 0x{:02x}, expected 0x{:02x}", got, kind));
  uint8_t version = in.u8();
  if (version != kWireVersion) {
    in.fail(fmt::format("protocol version {}, this build speaks {}", version, kWireVersion));
  }
}

DataType read_dtype(ByteReader& in, std::string_view field) {
  uint8_t value = in.u8();
  try {
    return dtype_from_wire(value);
  } catch (const InvalidArgument&) {
    in.fail(fmt::format("{} has invalid data type {}", field, value));
  }
}

// What the coordinator and the executor compute from a list of sizes: the element count of a
// shape, the total of splits or first dimensions. Both must fit in int64 (signed overflow is
// undefined behaviour), which any real tensor does by far. A control operation's shape is not a
// tensor's (older peers sent a process set's rank list there), so it is combined with nothing.
enum class Combined { product, sum, nothing };

Combined shape_combined(OpType op) {
  const bool rank_list = op == OpType::process_set_add || op == OpType::process_set_remove;
  return rank_list ? Combined::nothing : Combined::product;
}

// Control arguments (rank lists, a set id, a flag): any values, checked by their consumer.
std::vector<int64_t> read_i64s(ByteReader& in, std::string_view field) {
  std::vector<int64_t> values(in.count(8, field));
  for (auto& value : values) value = in.i64();
  return values;
}

void write_i64s(ByteWriter& out, const std::vector<int64_t>& values) {
  out.count(values.size());
  for (int64_t value : values) out.i64(value);
}

std::vector<int64_t> read_non_negative_i64s(ByteReader& in, std::string_view field,
                                            Combined combined) {
  size_t n = in.count(8, field);
  std::vector<int64_t> values(n);
  int64_t total = combined == Combined::product ? 1 : 0;
  for (auto& value : values) {
    value = in.i64();
    if (value < 0) in.fail(fmt::format("{} holds negative value {}", field, value));
    bool overflow = false;
    if (combined == Combined::product) overflow = __builtin_mul_overflow(total, value, &total);
    if (combined == Combined::sum) overflow = __builtin_add_overflow(total, value, &total);
    if (overflow) {
      in.fail(fmt::format("{} has a {} beyond 64 bits", field,
                          combined == Combined::product ? "product" : "sum"));
    }
  }
  return values;
}

void write_request(ByteWriter& out, const Request& r) {
  out.i32(r.rank);
  out.string(r.name);
  out.u8(static_cast<uint8_t>(r.op));
  out.u8(static_cast<uint8_t>(r.reduce_op));
  out.u8(static_cast<uint8_t>(r.dtype));
  out.count(r.shape.size());
  for (int64_t dim : r.shape) out.i64(dim);
  out.i32(r.root);
  out.f64(r.prescale);
  out.f64(r.postscale);
  out.i32(r.process_set);
  out.u8(static_cast<uint8_t>(r.device));
  out.i32(r.device_index);
  out.count(r.splits.size());
  for (int64_t rows : r.splits) out.i64(rows);
  out.i32(r.group_id);
  out.i32(r.group_size);
  write_i64s(out, r.args);
  out.string(r.invalid);
}

Request read_request(ByteReader& in) {
  Request r;
  r.rank = in.i32();
  r.name = in.string("request name");
  r.op = static_cast<OpType>(in.enum_value(kOpTypeLimit, "op type of '" + r.name + "'"));
  r.reduce_op =
      static_cast<UserReduceOp>(in.enum_value(kUserReduceOpLimit, "reduce op of '" + r.name + "'"));
  r.dtype = read_dtype(in, "dtype of '" + r.name + "'");
  r.shape = read_non_negative_i64s(in, "shape of '" + r.name + "'", shape_combined(r.op));
  r.root = in.i32();
  r.prescale = in.f64();
  r.postscale = in.f64();
  r.process_set = in.i32();
  r.device = static_cast<DeviceKind>(in.enum_value(kDeviceKindLimit, "device of '" + r.name + "'"));
  r.device_index = in.i32();
  r.splits = read_non_negative_i64s(in, "splits of '" + r.name + "'", Combined::sum);
  r.group_id = in.i32();
  r.group_size = in.i32();
  r.args = read_i64s(in, "arguments of '" + r.name + "'");
  r.invalid = in.string("invalid-argument message of '" + r.name + "'");
  return r;
}

void write_response(ByteWriter& out, const Response& r) {
  out.u8(static_cast<uint8_t>(r.op));
  out.count(r.names.size());
  for (const auto& name : r.names) out.string(name);
  out.u8(static_cast<uint8_t>(r.reduce_op));
  out.u8(static_cast<uint8_t>(r.dtype));
  out.i32(r.root);
  out.f64(r.prescale);
  out.f64(r.postscale);
  out.i32(r.process_set);
  out.u8(static_cast<uint8_t>(r.device));
  out.count(r.first_dims.size());
  for (int64_t dim : r.first_dims) out.i64(dim);
  out.string(r.error);
  out.count(r.shape.size());
  for (int64_t dim : r.shape) out.i64(dim);
  out.count(r.splits.size());
  for (int64_t rows : r.splits) out.i64(rows);
  out.i32(r.group_id);
  write_i64s(out, r.args);
}

Response read_response(ByteReader& in) {
  Response r;
  r.op = static_cast<OpType>(in.enum_value(kOpTypeLimit, "response op type"));
  r.names.resize(in.count(kStringHeaderBytes, "response name count"));
  for (auto& name : r.names) name = in.string("response name");
  std::string who = r.names.empty() ? std::string("response") : "response for '" + r.names[0] + "'";
  r.reduce_op = static_cast<UserReduceOp>(in.enum_value(kUserReduceOpLimit, who + " reduce op"));
  r.dtype = read_dtype(in, who + " dtype");
  r.root = in.i32();
  r.prescale = in.f64();
  r.postscale = in.f64();
  r.process_set = in.i32();
  r.device = static_cast<DeviceKind>(in.enum_value(kDeviceKindLimit, who + " device"));
  r.first_dims = read_non_negative_i64s(in, who + " first_dims", Combined::sum);
  r.error = in.string(who + " error");
  r.shape = read_non_negative_i64s(in, who + " shape", shape_combined(r.op));
  r.splits = read_non_negative_i64s(in, who + " splits", Combined::sum);
  r.group_id = in.i32();
  r.args = read_i64s(in, who + " arguments");
  return r;
}

}  // namespace

std::vector<std::byte> encode(const RequestList& list) {
  ByteWriter out;
  write_header(out, kRequestListKind);
  out.boolean(list.shutdown);
  out.count(list.requests.size());
  for (const auto& request : list.requests) write_request(out, request);
  return out.take();
}

std::vector<std::byte> encode(const ResponseList& list) {
  ByteWriter out;
  write_header(out, kResponseListKind);
  out.boolean(list.shutdown);
  out.count(list.shutdown_ranks.size());
  for (int32_t rank : list.shutdown_ranks) out.i32(rank);
  out.count(list.responses.size());
  for (const auto& response : list.responses) write_response(out, response);
  out.boolean(list.parameters.has_value());
  if (list.parameters) {
    out.f64(list.parameters->cycle_time_ms);
    out.i64(static_cast<int64_t>(list.parameters->fusion_threshold));
    out.boolean(list.parameters->cache_enabled);
    out.boolean(list.parameters->final);
  }
  return out.take();
}

RequestList decode_request_list(std::span<const std::byte> bytes, int from_rank) {
  ByteReader in(bytes, fmt::format("malformed request list from rank {}", from_rank));
  read_header(in, kRequestListKind);
  RequestList list;
  list.shutdown = in.boolean("shutdown flag");
  list.requests.resize(in.count(kMinRequestBytes, "request count"));
  for (auto& request : list.requests) request = read_request(in);
  in.expect_end();
  return list;
}

ResponseList decode_response_list(std::span<const std::byte> bytes, int from_rank) {
  ByteReader in(bytes, fmt::format("malformed response list from rank {}", from_rank));
  read_header(in, kResponseListKind);
  ResponseList list;
  list.shutdown = in.boolean("shutdown flag");
  list.shutdown_ranks.resize(in.count(4, "shutdown rank count"));
  for (auto& rank : list.shutdown_ranks) rank = in.i32();
  list.responses.resize(in.count(kMinResponseBytes, "response count"));
  for (auto& response : list.responses) response = read_response(in);
  if (in.boolean("tuned parameters flag")) {
    TunedParameters& tuned = list.parameters.emplace();
    tuned.cycle_time_ms = in.f64();
    tuned.fusion_threshold = static_cast<uint64_t>(in.i64());
    tuned.cache_enabled = in.boolean("tuned cache flag");
    tuned.final = in.boolean("tuned final flag");
  }
  in.expect_end();
  return list;
}

}  // namespace kolo::negotiation
