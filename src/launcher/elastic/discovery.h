// Elastic host discovery: the user's --host-discovery-script prints the hosts available now, one
// "host" or "host:slots" per line; kolorun runs it about every second (as horovodrun) and starts
// or retires workers when its answer changes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "launcher/hosts/hosts.h"

namespace kolo::launcher {

// Parses the script's output. A line without ":slots" gets `default_slots` (--slots). Blank lines
// are skipped; a host listed twice keeps its last count. Throws InvalidArgument naming the line
// number and text for a bad host name or slot count.
std::vector<HostSlots> parse_discovery_output(std::string_view text, int default_slots);

// Runs `script` (through /bin/sh -c, so arguments and shell syntax work) and returns its stdout.
// Throws kolo::Error naming the script when it cannot start, exits non-zero (with its stderr's
// last line) or does not finish within `timeout` (it is killed then).
std::string run_discovery_script(const std::string& script, Duration timeout);

}  // namespace kolo::launcher
