#include "rendezvous/elastic_seat.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "base/errors.h"

namespace kolo::rendezvous {
namespace {

TEST(ElasticSeat, RoundTripsEverySeatOfARound) {
  for (int size : {1, 2, 3, 2147483647}) {
    for (int rank : {0, size / 2, size - 1}) {
      const ElasticSeatValue seat{rank, size};
      EXPECT_EQ(decode_elastic_seat(encode_elastic_seat(seat), "w"), seat);
    }
  }
  EXPECT_EQ(encode_elastic_seat({1, 3}), "1 3");
}

TEST(ElasticSeat, RefusesSeatsOutsideTheRoundAndForeignText) {
  for (const std::string& value : std::initializer_list<std::string>{
           std::string(), "1", "1 ", " 1 2", "1  2", "-1 2", "2 2", "3 2", "0 0", "+0 1", "0 1x",
           "0 1 2", "0 2147483648", "99999999999 3", std::string("0\0 1", 4)}) {
    EXPECT_THROW(decode_elastic_seat(value, "a:0#1"), ProtocolError) << "'" << value << "'";
  }
  try {
    decode_elastic_seat("5 3", "a:0#1");
    FAIL() << "no error";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("elastic worker a:0#1: its seat '5 3'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kolo::rendezvous
