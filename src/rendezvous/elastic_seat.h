// A worker's seat in an elastic round: kolorun writes "<rank> <size>" under the worker's assign
// key (rendezvous/elastic_keys.h), the worker's init() reads it. One encoder and one decoder, so
// the two sides cannot drift, and the decoder is fuzzed (fuzz/elastic_seat_fuzzer.cc): the value
// crosses processes, and a seat outside the round (rank >= size) must be refused, not used.
#pragma once

#include <string>
#include <string_view>

namespace kolo::rendezvous {

struct ElasticSeatValue {
  int rank = 0;
  int size = 1;
  bool operator==(const ElasticSeatValue&) const = default;
};

std::string encode_elastic_seat(const ElasticSeatValue& seat);

// Throws ProtocolError naming `worker` and the value unless it is "<rank> <size>" with
// 0 <= rank < size <= INT_MAX, decimal, one space, nothing else.
ElasticSeatValue decode_elastic_seat(std::string_view value, std::string_view worker);

}  // namespace kolo::rendezvous
