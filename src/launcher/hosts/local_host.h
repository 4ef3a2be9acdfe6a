// Deciding whether a host in the plan is this machine (spawn directly) or another one (ssh).
// Deliberately no DNS: a name is local when it is "localhost", 127.0.0.1, 127.0.1.1 (Debian's name
// for the machine itself), ::1, or this machine's own hostname (full or short). Anything else,
// other loopback addresses such as 127.0.0.2 included, is remote and started over ssh.
#pragma once

#include <string>

namespace kolo::launcher {

// gethostname(2), or "localhost" if that fails.
std::string machine_hostname();

// `machine` is this machine's hostname (a parameter so tests need not depend on the build host).
bool is_local_host(const std::string& host, const std::string& machine);

}  // namespace kolo::launcher
