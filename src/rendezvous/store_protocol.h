// The TcpStore wire protocol: one request frame, one reply frame (framing.h carries the length).
// Every length inside a frame is checked against the frame's remaining bytes and the limits below
// before anything is allocated, so a hostile or corrupt request costs nothing but a log line.
//
//   request = op (u8) || fields           reply = kind (u8) || fields
//   set:  key || value                    ok:      (nothing)
//   get:  key || timeout_ms (u64)         value:   value
//   add:  key || delta (i64)              number:  i64
//   wait: count (u32) || keys || timeout  timeout: count (u32) || the keys still missing
//                                         error:   message
//   key/message = length (u32) || bytes;  value = length (u64) || bytes;  integers little-endian.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kolo::rendezvous::wire {

inline constexpr size_t kMaxKeySize = 4096;
inline constexpr size_t kMaxValueSize = 64u << 20;
inline constexpr size_t kMaxWaitKeys = 65536;
// Largest frame either side accepts: one value plus generous room for the other fields.
inline constexpr uint64_t kMaxFrameSize = kMaxValueSize + (1u << 20);

enum class Op : uint8_t { set = 1, get = 2, add = 3, wait = 4 };
enum class ReplyKind : uint8_t { ok = 0, value = 1, number = 2, timeout = 3, error = 4 };

struct Request {
  Op op = Op::get;
  std::vector<std::string> keys;  // exactly one except for wait
  std::string value;              // set
  int64_t delta = 0;              // add
  uint64_t timeout_ms = 0;        // get, wait
};

struct Reply {
  ReplyKind kind = ReplyKind::ok;
  std::string text;                       // value, or error message
  int64_t number = 0;                     // add's result
  std::vector<std::string> missing_keys;  // timeout
};

// Throws InvalidArgument if a key, value or key count is over its limit (checked by the client
// before sending, so the user learns the limit instead of the server dropping the connection).
void check_limits(const Request& request);

std::string encode(const Request& request);
std::string encode(const Reply& reply);
// Both throw ProtocolError saying what is malformed.
Request decode_request(std::string_view payload);
Reply decode_reply(std::string_view payload);

// "get 'key'", "wait for 'a', 'b'": for error messages.
std::string describe(const Request& request);

}  // namespace kolo::rendezvous::wire
