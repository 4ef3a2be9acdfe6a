// Turning the TCP links between ranks of one host into shared-memory links, right after the
// mesh is connected. For each same-host pair the lower rank creates the segment and offers its
// name over the pair's (authenticated) link; the higher rank maps it and answers; the lower rank
// then unlinks the name. A pair that cannot use shared memory (no room in /dev/shm, a failure
// on either side) keeps its TCP link, with a warning that says why.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/logger.h"
#include "transport/link.h"

namespace kolo::transport::shm {

struct UpgradeOptions {
  int rank = 0;
  uint64_t round = 0;
  std::string job_tag;  // names this job's segments; derived from, never equal to, the secret
  size_t ring_bytes = 1 << 20;  // per direction; a power of two
  std::vector<bool> same_host;  // per rank: shares this rank's host
  Deadline deadline = Deadline::never();
};

// Replaces links[r] (r on this host) by shared-memory links where possible. Returns how many
// links were upgraded. All ranks of the host must call it with matching options.
int upgrade_same_host_links(std::vector<std::unique_ptr<Link>>& links,
                            const UpgradeOptions& options, const Logger& logger);

// The message warning that /dev/shm is too small (empty when `free_bytes` suffices).
std::string small_dev_shm_warning(uint64_t total_bytes, uint64_t free_bytes, uint64_t needed);

}  // namespace kolo::transport::shm
