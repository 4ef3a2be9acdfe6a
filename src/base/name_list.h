// Comma-separated lists of names in settings and rendezvous values ("eth0, eth1",
// "10.0.0.5:4000,host:4000"): parsed in one place so every reader trims and dedupes alike.
#pragma once

#include <string>
#include <vector>

namespace kolo {

// "eth0,eth1" or " eth0 , ,eth1,eth0," -> {"eth0", "eth1"}: items trimmed of blanks, empty and
// repeated items dropped, first occurrence order kept.
std::vector<std::string> parse_name_list(const std::string& text);

}  // namespace kolo
