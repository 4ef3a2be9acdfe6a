// Host lists a user or a cluster hands kolorun (launcher/hosts.h, volcano.h): the -H list, an MPI
// hostfile and a Volcano worker file, all from the same input text. Whatever parses must be a
// list of valid, distinct host names with at least one slot each, on which the rank plan works
// for any -np it accepts.
#include <set>

#include "fuzz/fuzz_support.h"
#include "launcher/hosts/hosts.h"
#include "launcher/hosts/volcano.h"

namespace {

using namespace kolo;
using launcher::HostSlots;

void check_hosts(const std::vector<HostSlots>& hosts) {
  std::set<std::string> names;
  long total = 0;
  for (const HostSlots& host : hosts) {
    fuzz::require(launcher::valid_host_name(host.host), "every host name is valid");
    fuzz::require(host.slots >= 1, "every host has a slot");
    fuzz::require(names.insert(host.host).second, "no host twice");
    total += host.slots;
  }
  // The plan for the smallest, a middling and the largest -np, and one rank too many.
  for (long np : {1L, total / 2 + 1, total, total + 1}) {
    if (np > 100000) continue;  // the plan holds one entry per rank
    auto plan =
        fuzz::decode_or_refuse([&] { return launcher::assign_slots(hosts, static_cast<int>(np)); });
    fuzz::require(plan.has_value() == (np <= total), "a plan exactly when -np fits the slots");
    if (plan) {
      fuzz::require(plan->size() == static_cast<size_t>(np), "one slot per rank");
      (void)launcher::hosts_in_plan(*plan);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // First byte: --slots-per-host (0: not given) for the parsers that take a default.
  const std::optional<int> default_slots =
      data[0] % 4 == 0 ? std::nullopt : std::optional<int>(data[0] % 4);
  const std::string_view text = fuzz::as_text(data + 1, size - 1);

  if (auto hosts =
          fuzz::decode_or_refuse([&] { return launcher::parse_hosts(text, default_slots); }))
    check_hosts(*hosts);
  if (auto hosts = fuzz::decode_or_refuse(
          [&] { return launcher::parse_hostfile(text, "fuzz hostfile", default_slots); }))
    check_hosts(*hosts);
  if (auto hosts = fuzz::decode_or_refuse([&] {
        return launcher::parse_volcano_worker_hosts(text, "fuzz worker.host",
                                                    default_slots.value_or(1), "worker-0");
      }))
    check_hosts(*hosts);
  return 0;
}
