// What a user's --host-discovery-script prints (launcher/discovery.h), read by kolorun about once
// a second for the whole of an elastic job: whatever parses must be valid, distinct host names
// with at least one slot each, in the order of their first line.
#include <set>

#include "fuzz/fuzz_support.h"
#include "launcher/elastic/discovery.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kolo;
  if (size == 0) return 0;
  const int default_slots = 1 + data[0] % 4;  // --slots
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  if (auto hosts = fuzz::decode_or_refuse(
          [&] { return launcher::parse_discovery_output(text, default_slots); })) {
    std::set<std::string> names;
    for (const auto& host : *hosts) {
      fuzz::require(launcher::valid_host_name(host.host), "every host name is valid");
      fuzz::require(host.slots >= 1, "every host has a slot");
      fuzz::require(names.insert(host.host).second, "no host twice");
      fuzz::require(text.find(host.host) != std::string_view::npos, "no host the text lacks");
    }
  }
  return 0;
}
