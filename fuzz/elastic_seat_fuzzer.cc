// An elastic worker's seat as kolorun writes it into the store ("<rank> <size>",
// rendezvous/elastic_seat.h): decoded, it must be a seat inside its round that survives being
// encoded and decoded again.
#include "fuzz/fuzz_support.h"
#include "rendezvous/elastic_seat.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kolo;
  const std::string_view text = fuzz::as_text(data, size);
  if (auto seat =
          fuzz::decode_or_refuse([&] { return rendezvous::decode_elastic_seat(text, "w"); })) {
    fuzz::require(seat->rank >= 0 && seat->rank < seat->size, "the seat is inside its round");
    // Leading zeros ("01 2") decode too, so compare seats, not texts.
    fuzz::require(
        rendezvous::decode_elastic_seat(rendezvous::encode_elastic_seat(*seat), "w") == *seat,
        "the seat encodes to a text that decodes to it");
  }
  return 0;
}
