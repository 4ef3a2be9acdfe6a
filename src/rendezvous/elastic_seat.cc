#include "rendezvous/elastic_seat.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "base/errors.h"

namespace kolo::rendezvous {

namespace {

// A whole non-negative decimal int, or nullopt ("+1", " 1", "1x" and overflow are not).
std::optional<int> whole_int(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::string encode_elastic_seat(const ElasticSeatValue& seat) {
  return fmt::format("{} {}", seat.rank, seat.size);
}

ElasticSeatValue decode_elastic_seat(std::string_view value, std::string_view worker) {
  const auto space = value.find(' ');
  const std::optional<int> rank = whole_int(value.substr(0, space));
  const std::optional<int> size =
      whole_int(space == std::string_view::npos ? std::string_view{} : value.substr(space + 1));
  if (!rank || !size || *rank >= *size) {
    throw ProtocolError(fmt::format(
        "elastic worker {}: its seat '{}' from kolorun is not '<rank> <size>' with 0 <= rank < "
        "size",
        worker, value.substr(0, 64)));
  }
  return ElasticSeatValue{*rank, *size};
}

}  // namespace kolo::rendezvous
