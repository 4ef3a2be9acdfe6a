#include "rendezvous/store_protocol.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "base/byte_codec.h"
#include "base/errors.h"

namespace kolo::rendezvous::wire {

namespace {

void write_keys(ByteWriter& out, const std::vector<std::string>& keys) {
  out.u32(static_cast<uint32_t>(keys.size()));
  for (const auto& key : keys) out.string(key);
}

std::vector<std::string> read_keys(ByteReader& in) {
  const uint32_t count = in.u32();
  if (count > kMaxWaitKeys)
    in.fail(fmt::format("{} keys is over the limit of {}", count, kMaxWaitKeys));
  std::vector<std::string> keys;
  keys.reserve(count);
  for (uint32_t i = 0; i < count; ++i) keys.push_back(in.string("key", kMaxKeySize));
  return keys;
}

}  // namespace

void check_limits(const Request& request) {
  if (request.keys.size() > kMaxWaitKeys) {
    throw InvalidArgument(fmt::format("rendezvous: {} keys in one wait, over the limit of {}",
                                      request.keys.size(), kMaxWaitKeys));
  }
  for (const auto& key : request.keys) {
    if (key.size() > kMaxKeySize) {
      throw InvalidArgument(fmt::format("rendezvous: key '{}...' is {} bytes, over the limit of {}",
                                        key.substr(0, 64), key.size(), kMaxKeySize));
    }
  }
  if (request.value.size() > kMaxValueSize) {
    throw InvalidArgument(fmt::format(
        "rendezvous: value for key '{}' is {} bytes, over the limit "
        "of {}",
        request.keys.empty() ? "" : request.keys.front(), request.value.size(), kMaxValueSize));
  }
}

std::string encode(const Request& request) {
  ByteWriter out;
  out.u8(static_cast<uint8_t>(request.op));
  switch (request.op) {
    case Op::set:
      out.string(request.keys.at(0));
      out.long_string(request.value);
      break;
    case Op::get:
      out.string(request.keys.at(0));
      out.u64(request.timeout_ms);
      break;
    case Op::add:
      out.string(request.keys.at(0));
      out.u64(static_cast<uint64_t>(request.delta));
      break;
    case Op::wait:
      write_keys(out, request.keys);
      out.u64(request.timeout_ms);
      break;
  }
  return out.take_string();
}

Request decode_request(std::string_view payload) {
  ByteReader in(payload, "malformed rendezvous request");
  Request request;
  const uint8_t op = in.u8();
  switch (op) {
    case static_cast<uint8_t>(Op::set):
      request.op = Op::set;
      request.keys.push_back(in.string("key", kMaxKeySize));
      request.value = in.long_string("value", kMaxValueSize);
      break;
    case static_cast<uint8_t>(Op::get):
      request.op = Op::get;
      request.keys.push_back(in.string("key", kMaxKeySize));
      request.timeout_ms = in.u64();
      break;
    case static_cast<uint8_t>(Op::add):
      request.op = Op::add;
      request.keys.push_back(in.string("key", kMaxKeySize));
      request.delta = static_cast<int64_t>(in.u64());
      break;
    case static_cast<uint8_t>(Op::wait):
      request.op = Op::wait;
      request.keys = read_keys(in);
      request.timeout_ms = in.u64();
      break;
    default:
      in.fail(fmt::format("unknown request type {}", op));
  }
  in.expect_end();
  return request;
}

std::string encode(const Reply& reply) {
  ByteWriter out;
  out.u8(static_cast<uint8_t>(reply.kind));
  switch (reply.kind) {
    case ReplyKind::ok:
      break;
    case ReplyKind::value:
      out.long_string(reply.text);
      break;
    case ReplyKind::number:
      out.u64(static_cast<uint64_t>(reply.number));
      break;
    case ReplyKind::timeout:
      write_keys(out, reply.missing_keys);
      break;
    case ReplyKind::error:
      out.string(reply.text);
      break;
  }
  return out.take_string();
}

Reply decode_reply(std::string_view payload) {
  ByteReader in(payload, "malformed rendezvous reply");
  Reply reply;
  const uint8_t kind = in.u8();
  switch (kind) {
    case static_cast<uint8_t>(ReplyKind::ok):
      reply.kind = ReplyKind::ok;
      break;
    case static_cast<uint8_t>(ReplyKind::value):
      reply.kind = ReplyKind::value;
      reply.text = in.long_string("value", kMaxValueSize);
      break;
    case static_cast<uint8_t>(ReplyKind::number):
      reply.kind = ReplyKind::number;
      reply.number = static_cast<int64_t>(in.u64());
      break;
    case static_cast<uint8_t>(ReplyKind::timeout):
      reply.kind = ReplyKind::timeout;
      reply.missing_keys = read_keys(in);
      break;
    case static_cast<uint8_t>(ReplyKind::error):
      reply.kind = ReplyKind::error;
      reply.text = in.string("error message", kMaxKeySize * 4);
      break;
    default:
      in.fail(fmt::format("unknown reply type {}", kind));
  }
  in.expect_end();
  return reply;
}

std::string describe(const Request& request) {
  std::vector<std::string> quoted;
  for (const auto& key : request.keys) quoted.push_back("'" + key + "'");
  const std::string keys = fmt::format("{}", fmt::join(quoted, ", "));
  switch (request.op) {
    case Op::set:
      return "set " + keys;
    case Op::get:
      return "get " + keys;
    case Op::add:
      return "add to " + keys;
    case Op::wait:
      return "wait for " + keys;
  }
  return "request";
}

}  // namespace kolo::rendezvous::wire
