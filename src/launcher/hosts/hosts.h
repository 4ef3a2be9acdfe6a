// Where ranks run: the host list (-H host:slots,...), hostfiles, and the assignment of ranks to
// slots. Assignment mirrors horovodrun: hosts in the order given, each filled before the next, so
// ranks sharing a host are consecutive; local and cross ranks follow from that order.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kolo::launcher {

struct HostSlots {
  std::string host;
  int slots = 0;
  bool operator==(const HostSlots&) const = default;
};

// Parses "host1:2,host2:4". An entry without ":<slots>" gets `default_slots` (--slots-per-host)
// when given. Throws InvalidArgument naming the bad entry (missing or non-numeric slots, empty or
// invalid host name, zero slots, a host listed twice).
std::vector<HostSlots> parse_hosts(std::string_view text,
                                   std::optional<int> default_slots = std::nullopt);

// Parses hostfile text: one host per line as "host slots=N" (max_slots=M is accepted and
// ignored, as in Open MPI hostfiles) or "host:N", or a bare "host" when `default_slots` is given;
// '#' starts a comment; blank lines are skipped. `source` names the file in error messages, which
// also give the line number.
std::vector<HostSlots> parse_hostfile(std::string_view text, const std::string& source,
                                      std::optional<int> default_slots = std::nullopt);

// Reads a whole text file (hostfile, worker.host); throws SystemError naming `what` and the path.
std::string read_text_file(const std::string& path, const std::string& what);

// Host names as horovodrun accepts them (letters, digits, '_', '.', '-'): no IPv6 literals, no
// user@host, nothing a remote shell would interpret.
bool valid_host_name(std::string_view name);

// One rank's place in the job, as horovodrun's SlotInfo.
struct SlotAssignment {
  std::string host;
  int rank = 0;
  int size = 0;
  int local_rank = 0;  // index among the ranks on this host
  int local_size = 0;  // ranks on this host
  int cross_rank = 0;  // index among the ranks with the same local_rank (one per host)
  int cross_size = 0;  // hosts that have a rank with this local_rank
  bool operator==(const SlotAssignment&) const = default;
};

// Assigns ranks 0..num_proc-1 to slots in host order. Throws InvalidArgument when num_proc < 1 or
// when it is larger than the total number of slots (naming both numbers).
std::vector<SlotAssignment> assign_slots(const std::vector<HostSlots>& hosts, int num_proc);

// The hosts that received at least one rank, in plan order (each once).
std::vector<std::string> hosts_in_plan(const std::vector<SlotAssignment>& plan);

}  // namespace kolo::launcher
