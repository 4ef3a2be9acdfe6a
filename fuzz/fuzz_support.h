// What every fuzz target checks besides the sanitizers: a decoder given hostile bytes either
// returns a value or throws the kolo::Error it documents (ProtocolError, InvalidArgument, ...).
// Anything else escaping it (std::out_of_range, std::bad_alloc, std::length_error, a foreign
// exception) is a bug, so it aborts and libFuzzer keeps the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string_view>
#include <vector>

#include "base/errors.h"

namespace kolo::fuzz {

// Runs `decode`; a kolo::Error is the expected refusal of bad input, anything else aborts.
template <typename Decode>
void refuses_cleanly(Decode&& decode) {
  try {
    decode();
  } catch (const kolo::Error&) {
    // The documented answer to malformed input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "decoder threw a non-kolo exception: %s\n", e.what());
    std::abort();
  }
}

// The decoded value, or nullopt when `decode` refused the input with a kolo::Error. Properties of
// the value are checked by the caller, outside, so that their failures are not taken for refusals.
template <typename Decode>
auto decode_or_refuse(Decode&& decode) -> std::optional<decltype(decode())> {
  std::optional<decltype(decode())> value;
  refuses_cleanly([&] { value.emplace(decode()); });
  return value;
}

// Fails loudly when a property the target checks does not hold.
inline void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz property violated: %s\n", what);
    std::abort();
  }
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits the input at '\0' into exactly `count` fields (missing ones empty, the last one keeps
// the rest), so one input can carry several environment variables or command-line values.
inline std::vector<std::string_view> fields(std::string_view text, size_t count) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < count) {
    const size_t end = text.find('\0');
    out.push_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
  }
  out.push_back(text);
  return out;
}

}  // namespace kolo::fuzz
