#include "rendezvous/peer_version.h"

#include <fmt/format.h>

#include <charconv>

#include "base/errors.h"

namespace kolo::rendezvous {

void publish_version(Store& store, const std::string& key, uint32_t version) {
  store.set(key, std::to_string(version));
}

void check_peer_version(Store& store, const std::string& key, int rank, int peer, uint32_t version,
                        const std::string& what) {
  std::string text;
  try {
    // Zero wait: a peer that has one published it before the key the caller waited for.
    text = store.get(key, Duration::zero());
  } catch (const TimeoutError&) {
    throw ProtocolError(fmt::format(
        "rank {}: rank {} published no {} version, so it runs an older kolo (one that speaks "
        "version {} or earlier) while this rank speaks version {}: run the same kolo on every "
        "rank of the job",
        rank, peer, what, version - 1, version));
  }
  uint32_t theirs = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), theirs);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw ProtocolError(
        fmt::format("rank {}: rank {} published the {} version '{}', which is not "
                    "a number",
                    rank, peer, what, text));
  }
  if (theirs != version) {
    throw ProtocolError(fmt::format(
        "rank {}: rank {} speaks {} version {}, this rank speaks version {}: run the same kolo "
        "on every rank of the job",
        rank, peer, what, theirs, version));
  }
}

}  // namespace kolo::rendezvous
