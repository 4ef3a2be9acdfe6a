// Volcano (Kubernetes batch) jobs mount the worker pods' names at /etc/volcano/worker.host, one
// per line. Users build an MPI hostfile from it as the TopsDL recipe does:
//   echo "localhost slots=8" > hostfile; sed "s/$/ slots=8/" /etc/volcano/worker.host >> hostfile
// kolorun reads the file directly and builds the same host list.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "launcher/hosts/hosts.h"

namespace kolo::launcher {

// "localhost" first, then every worker named in `text` (first word of each line; '#' comments and
// blank lines skipped), each with `slots_per_host` slots. A worker that is this machine
// (`machine_hostname`) is not listed a second time. Throws InvalidArgument with the line number
// for an invalid name or a worker listed twice.
std::vector<HostSlots> parse_volcano_worker_hosts(std::string_view text, const std::string& source,
                                                  int slots_per_host,
                                                  const std::string& machine_hostname);

}  // namespace kolo::launcher
