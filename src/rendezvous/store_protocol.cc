#include "rendezvous/store_protocol.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "base/errors.h"

namespace kolo::rendezvous::wire {

namespace {

class Writer {
 public:
  void u8(uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void u32(uint32_t value) { little_endian(value, 4); }
  void u64(uint64_t value) { little_endian(value, 8); }
  void short_string(std::string_view text) {
    u32(static_cast<uint32_t>(text.size()));
    out_.append(text);
  }
  void long_string(std::string_view text) {
    u64(text.size());
    out_.append(text);
  }
  std::string take() { return std::move(out_); }

 private:
  void little_endian(uint64_t value, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  uint8_t u8() { return static_cast<uint8_t>(take(1)[0]); }
  uint32_t u32() { return static_cast<uint32_t>(little_endian(4)); }
  uint64_t u64() { return little_endian(8); }
  std::string short_string(size_t limit, const char* what) { return string_of(u32(), limit, what); }
  std::string long_string(size_t limit, const char* what) { return string_of(u64(), limit, what); }
  void expect_end() const {
    if (!in_.empty()) throw ProtocolError(fmt::format("{} trailing bytes in message", in_.size()));
  }

 private:
  std::string string_of(uint64_t length, size_t limit, const char* what) {
    // Checked before allocating: the length came from the peer.
    if (length > limit) {
      throw ProtocolError(
          fmt::format("{} of {} bytes is over the limit of {}", what, length, limit));
    }
    return std::string(take(static_cast<size_t>(length)));
  }
  uint64_t little_endian(size_t bytes) {
    const std::string_view raw = take(bytes);
    uint64_t value = 0;
    for (size_t i = 0; i < bytes; ++i) {
      value |= static_cast<uint64_t>(static_cast<uint8_t>(raw[i])) << (8 * i);
    }
    return value;
  }
  std::string_view take(size_t bytes) {
    if (bytes > in_.size()) {
      throw ProtocolError(
          fmt::format("message truncated ({} bytes wanted, {} left)", bytes, in_.size()));
    }
    const std::string_view part = in_.substr(0, bytes);
    in_.remove_prefix(bytes);
    return part;
  }
  std::string_view in_;
};

void write_keys(Writer& out, const std::vector<std::string>& keys) {
  out.u32(static_cast<uint32_t>(keys.size()));
  for (const auto& key : keys) out.short_string(key);
}

std::vector<std::string> read_keys(Reader& in) {
  const uint32_t count = in.u32();
  if (count > kMaxWaitKeys) {
    throw ProtocolError(fmt::format("{} keys is over the limit of {}", count, kMaxWaitKeys));
  }
  std::vector<std::string> keys;
  keys.reserve(count);
  for (uint32_t i = 0; i < count; ++i) keys.push_back(in.short_string(kMaxKeySize, "key"));
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
  Writer out;
  out.u8(static_cast<uint8_t>(request.op));
  switch (request.op) {
    case Op::set:
      out.short_string(request.keys.at(0));
      out.long_string(request.value);
      break;
    case Op::get:
      out.short_string(request.keys.at(0));
      out.u64(request.timeout_ms);
      break;
    case Op::add:
      out.short_string(request.keys.at(0));
      out.u64(static_cast<uint64_t>(request.delta));
      break;
    case Op::wait:
      write_keys(out, request.keys);
      out.u64(request.timeout_ms);
      break;
  }
  return out.take();
}

Request decode_request(std::string_view payload) {
  Reader in(payload);
  Request request;
  const uint8_t op = in.u8();
  switch (op) {
    case static_cast<uint8_t>(Op::set):
      request.op = Op::set;
      request.keys.push_back(in.short_string(kMaxKeySize, "key"));
      request.value = in.long_string(kMaxValueSize, "value");
      break;
    case static_cast<uint8_t>(Op::get):
      request.op = Op::get;
      request.keys.push_back(in.short_string(kMaxKeySize, "key"));
      request.timeout_ms = in.u64();
      break;
    case static_cast<uint8_t>(Op::add):
      request.op = Op::add;
      request.keys.push_back(in.short_string(kMaxKeySize, "key"));
      request.delta = static_cast<int64_t>(in.u64());
      break;
    case static_cast<uint8_t>(Op::wait):
      request.op = Op::wait;
      request.keys = read_keys(in);
      request.timeout_ms = in.u64();
      break;
    default:
      throw ProtocolError(fmt::format("unknown request type {}", op));
  }
  in.expect_end();
  return request;
}

std::string encode(const Reply& reply) {
  Writer out;
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
      out.short_string(reply.text);
      break;
  }
  return out.take();
}

Reply decode_reply(std::string_view payload) {
  Reader in(payload);
  Reply reply;
  const uint8_t kind = in.u8();
  switch (kind) {
    case static_cast<uint8_t>(ReplyKind::ok):
      reply.kind = ReplyKind::ok;
      break;
    case static_cast<uint8_t>(ReplyKind::value):
      reply.kind = ReplyKind::value;
      reply.text = in.long_string(kMaxValueSize, "value");
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
      reply.text = in.short_string(kMaxKeySize * 4, "error message");
      break;
    default:
      throw ProtocolError(fmt::format("unknown reply type {}", kind));
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
